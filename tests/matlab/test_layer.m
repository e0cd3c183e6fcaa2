% SeparableLayer (matlab/SeparableLayer.m, through the MEX) against the same layer in plain Octave
% (matlab/separable_reference.m, here in double) on odd sizes, fp32, bf16 and fp16 storage, and chunked by a
% small workspace budget. Each value's bound is taken from M, the sum of the magnitudes of the terms that
% make it: the layer run on absolute values with the differences as sums (layer_magnitudes,
% gradient_magnitudes).
% Each convolution sums 9 products and the elementwise steps add a few roundings, so Z and dX are within
% 16 u of their magnitude (u = 2^-24); kernel and bias gradients sum n = H W clips products, so (n + 16) u.
% With 16-bit storage, inputs are compared as the device holds them (round_storage) and each stored
% intermediate tensor adds its rounding, u_t = 2^-11 (fp16) or 2^-8 (bf16): 4 u_t of Z's and dX's
% magnitude, and 2 u_t of M (the rounded differences, and the gradient's own rounding).
1;

function [Mk_minus, Mk_plus, Mb] = gradient_magnitudes(X, dZ)
% M(i, j, c): the sum over pixels and clips of |dZ| times |f2| + |f1| (|f2| + |f3| for Kplus) at tap (i, j).
  [H, W, C, F] = size(X);
  A = abs(reshape(X, H, W, C, 3, F / 3)); G = abs(dZ);
  pad = @(D) [zeros(1, W + 2, C, F / 3); zeros(H, 1, C, F / 3), D, zeros(H, 1, C, F / 3); zeros(1, W + 2, C, F / 3)];
  D1 = pad(reshape(A(:, :, :, 2, :) + A(:, :, :, 1, :), H, W, C, F / 3));
  D3 = pad(reshape(A(:, :, :, 2, :) + A(:, :, :, 3, :), H, W, C, F / 3));
  Mk_minus = zeros(3, 3, 1, 1, C); Mk_plus = Mk_minus;
  for i = 1:3
    for j = 1:3
      Mk_minus(i, j, 1, 1, :) = sum(sum(sum(D1(i:i + H - 1, j:j + W - 1, :, :) .* G, 1), 2), 4);
      Mk_plus(i, j, 1, 1, :) = sum(sum(sum(D3(i:i + H - 1, j:j + W - 1, :, :) .* G, 1), 2), 4);
    end
  end
  Mb = reshape(sum(sum(sum(G, 1), 2), 4), C, 1);
end

function [MZ, MdX] = layer_magnitudes(X, Km, b1, Kp, b2, dZ)
% MZ: |f2| + |b1| + |b2| + the convolutions of |f2| + |f1| and |f2| + |f3| by |Kminus| and |Kplus|; MdX: the
% backward pass's sums of |dZ| through |Kminus| and |Kplus|, placed as dX's three time steps are.
  [H, W, C, F] = size(X);
  clips = F / 3;
  A = abs(reshape(X, H, W, C, 3, clips));
  a = @(t) reshape(A(:, :, :, t, :), H, W, C, clips);
  G = abs(dZ);
  MZ = a(2) + reshape(abs(b1) + abs(b2), 1, 1, C);
  E1 = zeros(size(G)); E3 = E1;
  for c = 1:C
    MZ(:, :, c, :) = MZ(:, :, c, :) + convn(a(2)(:, :, c, :) + a(1)(:, :, c, :), rot90(abs(Km(:, :, 1, 1, c)), 2), 'same') ...
                                    + convn(a(2)(:, :, c, :) + a(3)(:, :, c, :), rot90(abs(Kp(:, :, 1, 1, c)), 2), 'same');
    E1(:, :, c, :) = convn(G(:, :, c, :), abs(Km(:, :, 1, 1, c)), 'same');
    E3(:, :, c, :) = convn(G(:, :, c, :), abs(Kp(:, :, 1, 1, c)), 'same');
  end
  MdX = reshape(cat(4, reshape(E1, H, W, C, 1, clips), reshape(G + E1 + E3, H, W, C, 1, clips), ...
                    reshape(E3, H, W, C, 1, clips)), H, W, C, F);
end

function check_layer(name, H, W, C, clips, storage, budget)
  X = randn(H, W, C, 3 * clips, 'single');
  layer = SeparableLayer(C, 'Storage', storage, 'WorkspaceBudget', budget);
  layer.Bminus = randn(C, 1, 'single'); layer.Bplus = randn(C, 1, 'single');
  dZ = randn(H, W, C, clips, 'single');
  r = @(v) round_storage(v, storage);
  [Zr, dXr, dKmr, dBmr, dKpr, dBpr] = separable_reference(r(X), r(layer.Kminus), r(layer.Bminus), r(layer.Kplus), ...
                                                          r(layer.Bplus), r(dZ));
  u = 2^-24; ut = 0;
  if strcmp(storage, 'bf16'), ut = 2^-8; end
  if strcmp(storage, 'f16'), ut = 2^-11; end
  n = H * W * clips;
  [MZ, MdX] = layer_magnitudes(r(X), r(layer.Kminus), r(layer.Bminus), r(layer.Kplus), r(layer.Bplus), r(dZ));
  Z = predict(layer, X);
  check_within(['predict Z: ' name], Z, Zr, (16 * u + 4 * ut) * MZ);
  [dX, dKm, dBm, dKp, dBp] = backward(layer, X, Z, dZ, []);
  check_within(['backward dX: ' name], dX, dXr, (16 * u + 4 * ut) * MdX);
  % 16-bit storage is what ran: every result holds values of the type (the layer's gradients too).
  results = {Z, dX, dKm, dBm, dKp, dBp};
  for i = 1:numel(results)
    assert(isa(results{i}, 'single') && isequal(round_storage(results{i}, storage), double(results{i})), ...
           '%s: result %d is not %s values in a single array', name, i, storage);
  end
  if budget > 0   % the small budget is what makes the layer run in chunks
    [~, report] = vkconv('separableForward', X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus, ...
                         'Storage', storage, 'WorkspaceBudget', budget);
    assert(report.chunks > 1, '%s: one chunk under a budget of %d bytes', name, budget);
  end
  [Mkm, Mkp, Mb] = gradient_magnitudes(r(X), r(dZ));
  check_within(['backward dKminus: ' name], dKm, dKmr, ((n + 16) * u + 2 * ut) * Mkm);
  check_within(['backward dKplus: ' name], dKp, dKpr, ((n + 16) * u + 2 * ut) * Mkp);
  check_within(['backward dBminus: ' name], dBm, dBmr, ((n + 16) * u + 2 * ut) * Mb);
  check_within(['backward dBplus: ' name], dBp, dBpr, ((n + 16) * u + 2 * ut) * Mb);
end

randn('seed', 11);
check_layer('7x9x5, 2 clips', 7, 9, 5, 2, 'single', 0);
check_layer('33x20x3, 4 clips, chunked', 33, 20, 3, 4, 'single', 4 * 33 * 20 * 3 * 4 * 2);
check_layer('12x17x4, 3 clips, bf16', 12, 17, 4, 3, 'bf16', 0);
check_layer('10x13x3, 2 clips, f16', 10, 13, 3, 2, 'f16', 0);
% Double data: the layer returns double, as MATLAB's arithmetic would with double operands.
layer = SeparableLayer(2);
X = randn(5, 6, 2, 3);
Z = predict(layer, double(layer.Kminus(1)) * 0 + X);
assert(isa(Z, 'single'), 'single kernels with double data give single results (MATLAB''s rule)');
layer.Kminus = double(layer.Kminus); layer.Kplus = double(layer.Kplus);
layer.Bminus = double(layer.Bminus); layer.Bplus = double(layer.Bplus);
assert(isa(predict(layer, X), 'double'), 'all-double operands give double results');
[dX, dKm, dBm, dKp, dBp] = backward(layer, X, [], randn(5, 6, 2, 1), []);
assert(all(cellfun(@(a) isa(a, 'double'), {dX, dKm, dBm, dKp, dBp})), 'all-double backward gives double');
% The default budget (a fifth of a call's operands) keeps the pool within 1.2 times them where one clip fits.
layer = SeparableLayer(8);
X = randn(40, 36, 8, 30, 'single');
[~, report] = vkconv('separableForward', X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus);
assert(report.chunks > 1 && report.peakOverOperands <= 1.25, 'forward: %d chunks, pool peak %.3f x the operands', ...
       report.chunks, report.peakOverOperands);
[~, ~, ~, ~, ~, report] = vkconv('separableBackward', X, layer.Kminus, layer.Kplus, randn(40, 36, 8, 10, 'single'));
assert(report.chunks > 1 && report.peakOverOperands <= 1.25, 'backward: %d chunks, pool peak %.3f x the operands', ...
       report.chunks, report.peakOverOperands);
printf('test_layer: passed\n');
