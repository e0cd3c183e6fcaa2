function k = ref_dilate(kernel, dilation)
% A 2-D kernel with dilation-1 zeros between its taps.
  k = zeros(dilation(1) * (size(kernel, 1) - 1) + 1, dilation(2) * (size(kernel, 2) - 1) + 1);
  k(1:dilation(1):end, 1:dilation(2):end) = kernel;
end
