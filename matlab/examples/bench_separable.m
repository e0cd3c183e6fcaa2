% BENCH_SEPARABLE  SeparableLayer's forward + backward at the MATLAB user's size (30 frames of 256 x 256 x 64
% by default), through vkconv on the current device and in plain Octave/MATLAB (separable_reference.m,
% convn), side by side in one run: wall time of each pass, the process's peak resident memory above what
% the data already hold (Linux: VmHWM, reset before each side; on a CPU device such as lavapipe the device
% memory is host memory and counts too), and vkconv's device pool peak against the
% call's operands. The two sides' results are compared too. Sizes can be set before running it.
%
%   addpath('<vkconv>/matlab', '<build>/matlab'); run('<vkconv>/matlab/examples/bench_separable.m')

if ~exist('frames', 'var'), frames = 30; end
if ~exist('channels', 'var'), channels = 64; end
if ~exist('height', 'var'), height = 256; end
if ~exist('width', 'var'), width = 256; end
if ~exist('rounds', 'var'), rounds = 2; end

randn('state', 1);
layer = SeparableLayer(channels);
layer.Bminus = randn(channels, 1, 'single'); layer.Bplus = randn(channels, 1, 'single');
X = randn(height, width, channels, frames, 'single');
dZ = randn(height, width, channels, frames / 3, 'single');
info = vkconv('device');
fprintf('device: %s (%s), %d x %d x %d x %d frames, %.0f MiB of frames\n', info.name, info.driver, height, width, ...
       channels, frames, numel(X) * 4 / 2^20);

vk = struct('forward', [], 'backward', []);
% Round 1 is a first call: it builds the device's pipelines and the pool's blocks, and its process peak is
% the one reported (later rounds reuse the blocks, which are then part of the baseline). The times reported
% are the last round's, as in a training loop, with the first call's beside them.
for round = 1:rounds
  base = resident_peak_kib(true);
  t = tic; [Z, forward_report] = vkconv('separableForward', X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus);
  vk.forward(round) = toc(t);
  t = tic;
  [dX, dKm, dKp, dBm, dBp, backward_report] = vkconv('separableBackward', X, layer.Kminus, layer.Kplus, dZ);
  vk.backward(round) = toc(t);
  if round == 1, vk_host_mib = (resident_peak_kib(false) - base) / 1024; end
  if round < rounds, clear Z dX dKm dKp dBm dBp; end
end

base = resident_peak_kib(true);
t = tic; Zr = separable_reference(X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus); plain_forward = toc(t);
t = tic;
[~, dXr, dKmr, dBmr, dKpr, dBpr] = separable_reference(X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus, dZ);
plain_both = toc(t);   % the reference's backward recomputes the forward (as a training step's would not)
plain_host_mib = (resident_peak_kib(false) - base) / 1024;
plain_backward = plain_both - plain_forward;

rel = @(a, b) max(abs(a(:) - b(:))) / max(abs(b(:)));
fprintf('\nagreement (max |difference| / max |plain|): Z %.2g, dX %.2g, dKminus %.2g, dKplus %.2g, db %.2g\n', ...
       rel(Z, Zr), rel(dX, dXr), rel(dKm, dKmr), rel(dKp, dKpr), rel(dBm, dBmr));
layer_operands = (numel(X) * 2 + numel(dZ) * 2) * 4 + 4 * 4 * 9 * channels + 4 * 4 * channels;
fprintf('\n| | vkconv (%s) | plain Octave (convn) |\n|---|---:|---:|\n', info.name);
fprintf('| forward, s | %.2f (first call %.2f) | %.2f |\n', vk.forward(end), vk.forward(1), plain_forward);
fprintf('| backward, s | %.2f (first call %.2f) | %.2f |\n', vk.backward(end), vk.backward(1), plain_backward);
fprintf('| forward + backward, s | %.2f | %.2f |\n', vk.forward(end) + vk.backward(end), plain_forward + plain_backward);
fprintf('| process peak above the data (host; lavapipe''s device memory included), MiB | %.0f | %.0f |\n', ...
       vk_host_mib, plain_host_mib);
fprintf('| device pool peak, forward, MiB | %.0f (%.3f x its operands, %d chunks) | |\n', ...
       forward_report.peakBytes / 2^20, forward_report.peakOverOperands, forward_report.chunks);
fprintf('| device pool peak, backward, MiB | %.0f (%.3f x its operands, %d chunks) | |\n', ...
       backward_report.peakBytes / 2^20, backward_report.peakOverOperands, backward_report.chunks);
fprintf('| layer operands (X, Z, dZ, dX, kernels, biases), MiB | %.0f | %.0f |\n', layer_operands / 2^20, layer_operands / 2^20);
fprintf('\nspeed-up of forward + backward: %.2f x; device pool peak %.3f x the layer''s operands\n', ...
       (plain_forward + plain_backward) / (vk.forward(end) + vk.backward(end)), ...
       max(forward_report.peakBytes, backward_report.peakBytes) / layer_operands);
