function [Z, dX, dKminus, dBminus, dKplus, dBplus] = separable_reference(X, Kminus, Bminus, Kplus, Bplus, dZ)
% SEPARABLE_REFERENCE  SeparableLayer's forward and backward pass in plain Octave/MATLAB (convn), on the
% host: what the layer costs without vkconv. Z = separable_reference(X, Kminus, Bminus, Kplus, Bplus) is the
% forward pass; with dZ it also returns the gradients. Arithmetic in the class of X.
  [H, W, C, F] = size(X);
  clips = F / 3;
  Xr = reshape(X, H, W, C, 3, clips);                 % no copy: clips of three time steps
  f1 = reshape(Xr(:, :, :, 1, :), H, W, C, clips);    % each time step indexed out: one copy each
  f2 = reshape(Xr(:, :, :, 2, :), H, W, C, clips);
  f3 = reshape(Xr(:, :, :, 3, :), H, W, C, clips);
  d1 = f2 - f1;
  d3 = f2 - f3;
  clear f1 f3;
  Z = f2 + reshape(Bminus + Bplus, 1, 1, C);
  for c = 1:C   % dlconv is a cross-correlation: convn with the kernel turned 180 degrees
    Z(:, :, c, :) = Z(:, :, c, :) + convn(d1(:, :, c, :), rot90(Kminus(:, :, 1, 1, c), 2), 'same') ...
                                  + convn(d3(:, :, c, :), rot90(Kplus(:, :, 1, 1, c), 2), 'same');
  end
  if nargin < 6
    return;
  end
  e1 = zeros(size(dZ), class(dZ));
  e3 = zeros(size(dZ), class(dZ));
  for c = 1:C   % the gradient through a cross-correlation is a convolution with the kernel as it is
    e1(:, :, c, :) = convn(dZ(:, :, c, :), Kminus(:, :, 1, 1, c), 'same');
    e3(:, :, c, :) = convn(dZ(:, :, c, :), Kplus(:, :, 1, 1, c), 'same');
  end
  dX = reshape(cat(4, reshape(-e1, H, W, C, 1, clips), reshape(dZ + e1 + e3, H, W, C, 1, clips), ...
                   reshape(-e3, H, W, C, 1, clips)), H, W, C, F);
  clear e1 e3;
  dKminus = kernel_gradient(d1, dZ);
  dKplus = kernel_gradient(d3, dZ);
  dBminus = reshape(sum(sum(sum(dZ, 1), 2), 4), C, 1);
  dBplus = dBminus;
end

function dK = kernel_gradient(D, G)
% dK(i, j, c) = sum over pixels and clips of G times D shifted by the tap (padding 1).
  [H, W, C, clips] = size(D);
  Dp = zeros(H + 2, W + 2, C, clips, class(D));
  Dp(2:H + 1, 2:W + 1, :, :) = D;
  dK = zeros(3, 3, 1, 1, C, class(D));
  for i = 1:3
    for j = 1:3
      dK(i, j, 1, 1, :) = reshape(sum(sum(sum(Dp(i:i + H - 1, j:j + W - 1, :, :) .* G, 1), 2), 4), 1, 1, 1, 1, C);
    end
  end
end
