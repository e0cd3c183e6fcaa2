function dX = ref_conv_backward_data(dY, W, data_size, stride, dilation, pads)
% The gradient of ref_conv with respect to X, in double: each output gradient, placed every stride,
% spread through the dilated filter (a full convolution), the padding cropped away.
  dY = double(dY); W = double(W);
  data_size(end + 1:4) = 1;
  [R, S, Cg, Kg, G] = size(W);
  N = size(dY, 4);
  reach = dilation .* ([R S] - 1) + 1;
  Hp = data_size(1) + pads(1) + pads(2);
  Wp = data_size(2) + pads(3) + pads(4);
  dX = zeros(data_size);
  for n = 1:N
    for g = 1:G
      for cg = 1:Cg
        acc = zeros(Hp, Wp);
        for kg = 1:Kg
          full = conv2(ref_spread(dY(:, :, (g - 1) * Kg + kg, n), stride), ref_dilate(W(:, :, cg, kg, g), dilation), 'full');
          acc(1:size(full, 1), 1:size(full, 2)) = acc(1:size(full, 1), 1:size(full, 2)) + full;
        end
        dX(:, :, (g - 1) * Cg + cg, n) = acc(pads(1) + (1:data_size(1)), pads(3) + (1:data_size(2)));
      end
    end
  end
end
