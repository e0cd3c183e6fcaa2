function kib = resident_peak_kib(reset)
% RESIDENT_PEAK_KIB  The process's peak resident memory in KiB (Linux's VmHWM), NaN elsewhere. With reset
% true, the peak is first set back to the current size (/proc/self/clear_refs), so that the next reading
% is the peak since now.
  kib = NaN;
  if reset
    fid = fopen('/proc/self/clear_refs', 'w');
    if fid < 0, return; end
    fprintf(fid, '5'); fclose(fid);
  end
  if ~exist('/proc/self/status', 'file'), return; end
  text = fileread('/proc/self/status');
  kib = sscanf(text(strfind(text, 'VmHWM:') + 6:end), '%f', 1);
end
