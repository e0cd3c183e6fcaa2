function dW = ref_conv_backward_filter(X, dY, weights_size, stride, dilation, pads)
% The gradient of ref_conv with respect to W, in double: the padded data cross-correlated with the
% output gradient placed every stride, read at the dilated taps, summed over the images.
  X = double(X); dY = double(dY);
  weights_size(end + 1:5) = 1;
  R = weights_size(1); S = weights_size(2); Cg = weights_size(3); Kg = weights_size(4); G = weights_size(5);
  [H, Wd, C, N] = size(X);
  reach = dilation .* ([R S] - 1) + 1;
  Xp = zeros(H + pads(1) + pads(2), Wd + pads(3) + pads(4), C, N);
  Xp(pads(1) + (1:H), pads(3) + (1:Wd), :, :) = X;
  dW = zeros(weights_size);
  for g = 1:G
    for kg = 1:Kg
      for cg = 1:Cg
        acc = zeros(R, S);
        for n = 1:N
          up = ref_spread(dY(:, :, (g - 1) * Kg + kg, n), stride);
          full = conv2(Xp(:, :, (g - 1) * Cg + cg, n), rot90(up, 2), 'valid');
          acc = acc + full(1:dilation(1):reach(1), 1:dilation(2):reach(2));
        end
        dW(:, :, cg, kg, g) = acc;
      end
    end
  end
end
