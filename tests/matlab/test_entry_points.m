% Every convolution command of the MEX against the conv2 reference (ref_*.m, double) on odd shapes:
% grouped, depthwise, strided, dilated, asymmetrically padded and 'same'; with and without bias; single
% and double; fp32 and 16-bit storage; several algorithms. The bound of each value is the fp32 sum's:
% (L + 1) * u * sum|terms| with L the reduction length and u = 2^-24 (each product and each addition
% rounded once), and for 16-bit storage also half a unit in the last place of the stored output
% (u_t * |y|, u_t = 2^-11 for fp16 and 2^-8 for bf16, plus fp16's smallest subnormal step), the inputs
% being compared as the device stores them (round_storage).
1;

function b = sum_bound(L, magnitude, ref, storage, output_rounded)
  b = (L + 1) * 2^-24 * magnitude;
  if output_rounded && strcmpi(storage, 'f16')
    b = b + 2^-11 * abs(ref) + 2^-25;
  elseif output_rounded && strcmpi(storage, 'bf16')
    b = b + 2^-8 * abs(ref) + 2^-134;
  end
end

% Results come back in the input's class, hold values of the storage type (16-bit: exactly representable
% there), and the algorithm asked for is the one that ran.
function check_result(what, result, X, storage, algorithm, command, rounded)
  assert(isa(result, class(X)), '%s: returned %s for %s input', what, class(result), class(X));
  if rounded && ~strcmp(storage, 'single')
    assert(isequal(round_storage(result, storage), double(result)), '%s: values not of %s', what, storage);
  end
  st = vkconv('stats');
  assert(strcmp(st.command, command), '%s: stats are of %s', what, st.command);
  assert(strcmp(algorithm, 'auto') || strcmp(st.algorithm, algorithm), '%s: %s ran', what, st.algorithm);
end

function ran = check_case(name, X, W, b, options, algorithms, storage)
  s = struct(options{:});
  stride = [1 1] .* s.Stride; dilation = [1 1] .* s.DilationFactor;
  pads = ref_pads(size(X), size(W), stride, dilation, s.Padding);
  Xs = round_storage(X, storage); Ws = round_storage(W, storage); bs = round_storage(b, storage);
  ref = ref_conv(Xs, Ws, bs, stride, dilation, pads);
  magnitude = ref_conv(abs(Xs), abs(Ws), abs(bs), stride, dilation, pads);
  dY = cast(randn(size(ref)), class(X)); dYs = round_storage(dY, storage);
  ref_dx = ref_conv_backward_data(dYs, Ws, size(X), stride, dilation, pads);
  mag_dx = ref_conv_backward_data(abs(dYs), abs(Ws), size(X), stride, dilation, pads);
  ref_dw = ref_conv_backward_filter(Xs, dYs, size(W), stride, dilation, pads);
  mag_dw = ref_conv_backward_filter(abs(Xs), abs(dYs), size(W), stride, dilation, pads);
  ref_db = reshape(sum(sum(sum(dYs, 1), 2), 4), [], 1);
  [R, S, Cg, Kg] = size(W);
  [P, Q, ~, N] = size(ref);
  ran = 0;
  for a = 1:numel(algorithms)
    opts = [options, {'Storage', storage, 'Algorithm', algorithms{a}}];
    tag = sprintf('%s, %s, %s', name, algorithms{a}, storage);
    y = vkconv('forward', X, W, b, opts{:});
    check_result(['forward: ' tag], y, X, storage, algorithms{a}, 'forward', true);
    check_within(['forward: ' tag], y, ref, sum_bound(R * S * Cg + 1, magnitude, ref, storage, true));
    dx = vkconv('backwardData', dY, W, size(X), opts{:});
    check_result(['backwardData: ' tag], dx, X, storage, algorithms{a}, 'backwardData', true);
    check_within(['backwardData: ' tag], dx, ref_dx, sum_bound(R * S * Kg, mag_dx, ref_dx, storage, true));
    [dw, db] = vkconv('backwardFilter', X, dY, size(W), opts{:});
    check_result(['backwardFilter dW: ' tag], dw, X, storage, algorithms{a}, 'backwardFilter', false);
    check_result(['backwardFilter db: ' tag], db, X, storage, algorithms{a}, 'backwardFilter', false);
    check_within(['backwardFilter dW: ' tag], dw, ref_dw, sum_bound(N * P * Q, mag_dw, ref_dw, storage, false));
    check_within(['backwardFilter db: ' tag], db, ref_db, sum_bound(N * P * Q, reshape(sum(sum(sum(abs(dYs), 1), 2), 4), [], 1), ref_db, storage, false));
    dw_alone = vkconv('backwardFilter', X, dY, size(W), opts{:});
    check_within(['backwardFilter dW alone: ' tag], dw_alone, ref_dw, sum_bound(N * P * Q, mag_dw, ref_dw, storage, false));
    ran = ran + 5;
  end
  db = vkconv('backwardBias', dY, 'Storage', storage);
  check_result(['backwardBias: ' name], db, X, storage, 'auto', 'backwardBias', false);
  check_within(['backwardBias: ' name ', ' storage], db, ref_db, sum_bound(N * P * Q, reshape(sum(sum(sum(abs(dYs), 1), 2), 4), [], 1), ref_db, storage, false));
  ran = ran + 1;
end

randn('seed', 7); rand('seed', 7);
printf('device: %s\n', vkconv('device').name);
all_algorithms = {'auto', 'direct', 'im2col', 'mec', 'implicit-gemm'};
ran = 0;
% Grouped (2 groups of 2 channels, 5 filters each), strided, dilated, dlconv's 2x2 [top left; bottom right].
X = randn(7, 6, 4, 2, 'single'); W = randn(3, 3, 2, 5, 2, 'single'); b = randn(10, 1, 'single');
ran = ran + check_case('grouped', X, W, b, {'Stride', [2 1], 'DilationFactor', [1 2], 'Padding', [1 2; 0 1]}, all_algorithms, 'single');
% 'same' with a 5x3 filter and stride [1 2], a scalar bias, double data (results double).
X = randn(9, 11, 3, 3); W = randn(5, 3, 3, 4); 
ran = ran + check_case('same, double', X, W, 0.5, {'Stride', [1 2], 'DilationFactor', 1, 'Padding', 'same'}, {'auto', 'im2col'}, 'single');
% Depthwise with a channel multiplier of 2, dilation 2, [top bottom left right] padding, no bias.
X = randn(13, 10, 6, 2, 'single'); W = randn(3, 3, 1, 2, 6, 'single');
ran = ran + check_case('depthwise', X, W, [], {'Stride', 1, 'DilationFactor', 2, 'Padding', [1 2 0 3]}, {'auto', 'depthwise', 'direct'}, 'single');
% 'same' with odd totals (3 rows: 1 above, 2 below; 1 column: on the right) from a 4x2 filter and stride [2 1].
X = randn(9, 6, 3, 2, 'single'); W = randn(4, 2, 3, 2, 'single');
ran = ran + check_case('odd same', X, W, [], {'Stride', [2 1], 'DilationFactor', 1, 'Padding', 'same'}, {'auto', 'direct'}, 'single');
% 1x1, stride 2, one image (MATLAB drops its trailing singleton dimension), padding [vertical horizontal]
% with a vertical pad beyond the 1x1 filter: those output rows see only padding, so they hold the bias.
X = randn(5, 7, 8, 'single'); W = randn(1, 1, 8, 3, 'single');
ran = ran + check_case('1x1 strided', X, W, randn(3, 1, 'single'), {'Stride', 2, 'DilationFactor', 1, 'Padding', [2 0]}, {'auto', 'mec'}, 'single');
% 16-bit storage: the values the device holds are fp16 or bf16, sums fp32, outputs single.
X = randn(9, 8, 6, 2, 'single'); W = randn(3, 3, 3, 2, 2, 'single'); b = randn(4, 1, 'single');
for storage = {'f16', 'bf16'}
  ran = ran + check_case('grouped 16-bit', X, W, b, {'Stride', [1 2], 'DilationFactor', 1, 'Padding', [0 1; 1 1]}, {'auto', 'direct'}, storage{1});
end
X = randn(11, 9, 4, 3, 'single'); W = randn(3, 3, 1, 1, 4, 'single');
ran = ran + check_case('depthwise f16', X, W, randn(4, 1, 'single'), {'Stride', 1, 'DilationFactor', 1, 'Padding', 'same'}, {'depthwise'}, 'f16');
% Mixed classes give single, as MATLAB's arithmetic does; all-double gives double.
X = randn(6, 5, 2, 2); W = randn(3, 3, 2, 2, 'single'); dY = randn(4, 3, 2, 2);
assert(isa(vkconv('forward', X, W, []), 'single') && isa(vkconv('forward', X, double(W), 0), 'double'));
assert(isa(vkconv('backwardData', dY, W, size(X)), 'single') && isa(vkconv('backwardData', dY, double(W), size(X)), 'double'));
[dw, db] = vkconv('backwardFilter', single(X), dY, size(W));
assert(isa(dw, 'single') && isa(db, 'single'));
[dw, db] = vkconv('backwardFilter', X, dY, size(W));
assert(isa(dw, 'double') && isa(db, 'double') && isa(vkconv('backwardBias', single(dY)), 'single'));
ran = ran + 1;
printf('test_entry_points: %d checks passed\n', ran);
assert(ran == 104, 'expected 104 checks, ran %d', ran);  % (5 per algorithm + 1) per case, and the classes
