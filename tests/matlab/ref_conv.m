function Y = ref_conv(X, W, b, stride, dilation, pads)
% dlconv's forward pass in double, by conv2 over every (image, group, filter, channel): the
% cross-correlation of the zero-padded data with the dilated filter, sampled every stride.
% X: H x W x C x N; W: R x S x Cg x Kg x G; b: [] or one value per filter; pads [top bottom left right].
  X = double(X); W = double(W);
  [H, Wd, C, N] = size(X);
  [R, S, Cg, Kg, G] = size(W);
  Xp = zeros(H + pads(1) + pads(2), Wd + pads(3) + pads(4), C, N);
  Xp(pads(1) + (1:H), pads(3) + (1:Wd), :, :) = X;
  reach = dilation .* ([R S] - 1) + 1;
  P = floor((size(Xp, 1) - reach(1)) / stride(1)) + 1;
  Q = floor((size(Xp, 2) - reach(2)) / stride(2)) + 1;
  Y = zeros(P, Q, Kg * G, N);
  for n = 1:N
    for g = 1:G
      for kg = 1:Kg
        k = (g - 1) * Kg + kg;
        acc = zeros(size(Xp, 1) - reach(1) + 1, size(Xp, 2) - reach(2) + 1);
        for cg = 1:Cg
          kernel = ref_dilate(W(:, :, cg, kg, g), dilation);
          acc = acc + conv2(Xp(:, :, (g - 1) * Cg + cg, n), rot90(kernel, 2), 'valid');
        end
        Y(:, :, k, n) = acc(1:stride(1):end, 1:stride(2):end);
        if ~isempty(b)
          Y(:, :, k, n) = Y(:, :, k, n) + b(min(k, numel(b)));
        end
      end
    end
  end
end
