function up = ref_spread(plane, stride)
% One output plane's values placed every stride (zeros between): the gradient as the input's grid sees it.
  up = zeros((size(plane, 1) - 1) * stride(1) + 1, (size(plane, 2) - 1) * stride(2) + 1);
  up(1:stride(1):end, 1:stride(2):end) = plane;
end
