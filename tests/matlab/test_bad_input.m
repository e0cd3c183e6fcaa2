% Bad input to every command gives a MATLAB error with a vkconv: identifier and a message naming what was
% passed, and leaves Octave and the MEX running: after every bad call a good one must still give the
% right answer.
1;

function expect_error(id, fragment, varargin)
  try
    vkconv(varargin{:});
  catch e
    if ~strcmp(e.identifier, id) || isempty(strfind(e.message, fragment))
      error('test:wrongError', 'expected %s mentioning "%s"; got %s: %s', id, fragment, e.identifier, e.message);
    end
    printf('  ok %-24s %s\n', id, e.message);
    return;
  end
  error('test:noError', 'no error for a call that should fail with %s ("%s")', id, fragment);
end

X = randn(6, 5, 4, 2, 'single'); W = randn(3, 3, 4, 3, 'single');
good = vkconv('forward', X, W, []);
inv = 'vkconv:invalidArgument';
count = 0;
bad = {
  {inv, 'usage'}
  {inv, 'usage', 42}
  {inv, 'unknown command ''nope''', 'nope'}
  {}  % entry 4: too many outputs, run apart below
  {inv, 'int8', 'forward', int8(X), W, []}
  {inv, 'complex single', 'forward', complex(X, X), W, []}
  {inv, 'sparse double', 'forward', sparse(double(X(:, :, 1))), W, []}
  {inv, 'char', 'forward', 'frames', W, []}
  {inv, 'cell', 'forward', {X}, W, []}
  {inv, 'struct', 'forward', struct('x', 1), W, []}
  {inv, 'logical', 'forward', true(6, 5, 4), W, []}
  {inv, 'is empty', 'forward', zeros(0, 5, 'single'), W, []}
  {inv, 'complex', 'forward', X, complex(W, W), []}
  {inv, '4 channels', 'forward', X, randn(3, 3, 3, 3, 'single'), []}
  {inv, 'at most 4 dimensions', 'forward', randn(2, 2, 2, 2, 2, 'single'), W, []}
  {inv, 'exceeds the padded data', 'forward', X, randn(7, 3, 4, 3, 'single'), []}
  {inv, 'from 1 to 2147483647', 'backwardFilter', ones(1, 1, 4096, 'single'), ones(1, 1, 4096, 'single'), [1 1 1 2^52 + 1 4096]}
  {inv, 'one value per filter (3)', 'forward', X, W, [1 2]}
  {inv, 'complex', 'forward', X, W, complex([1 2 3], 1)}
  {inv, 'unknown option ''Strides''', 'forward', X, W, [], 'Strides', 2}
  {inv, 'no value', 'forward', X, W, [], 'Stride'}
  {inv, 'from 1 to', 'forward', X, W, [], 'Stride', 0}
  {inv, 'whole numbers', 'forward', X, W, [], 'Stride', 1.5}
  {inv, 'two elements', 'forward', X, W, [], 'Stride', [1 2 3]}
  {inv, 'value nan', 'forward', X, W, [], 'DilationFactor', NaN}
  {inv, '''Padding'' must be ''same''', 'forward', X, W, [], 'Padding', 'valid'}
  {inv, 'from 0 to 2147483647', 'forward', X, W, [], 'Padding', 2^40}
  {inv, '''Storage''', 'forward', X, W, [], 'Storage', 'f64'}
  {inv, 'fast', 'forward', X, W, [], 'Algorithm', 'fast'}
  {inv, 'from 0 to', 'forward', X, W, [], 'WorkspaceLimit', -1}
  {inv, 'unknown option ''Stride''', 'backwardBias', good, 'Stride', 2}
  {inv, 'must be a scalar', 'device', [0 1]}
  {'vkconv:unsupported', 'winograd', 'forward', X, W, [], 'Algorithm', 'winograd', 'Stride', 2}
  {inv, 'not enough arguments', 'forward', X, W}
  {inv, 'sizeX', 'backwardData', good, W, [6 5 4 2 1 1]}
  {inv, 'dY', 'backwardData', good(:, :, 1:2, :), W, size(X)}
  {inv, 'from 1 to', 'backwardData', good, W, [6 0 4 2]}
  {inv, 'dY', 'backwardFilter', X, good(1:3, :, :, :), size(W)}
  {inv, 'channels', 'backwardFilter', X, good, [3 3 5 3]}
  {inv, 'complex', 'backwardBias', complex(good, good)}
  {inv, 'multiple of 3', 'separableForward', randn(4, 4, 2, 4, 'single'), zeros(3, 3, 1, 1, 2), zeros(2, 1), zeros(3, 3, 1, 1, 2), zeros(2, 1)}
  {inv, '3x3x1x1x2', 'separableForward', randn(4, 4, 2, 3, 'single'), zeros(3, 3, 2), zeros(2, 1), zeros(3, 3, 1, 1, 2), zeros(2, 1)}
  {inv, 'one value per channel (2)', 'separableForward', randn(4, 4, 2, 3, 'single'), zeros(3, 3, 1, 1, 2), zeros(3, 1), zeros(3, 3, 1, 1, 2), zeros(2, 1)}
  {inv, 'uint8', 'separableForward', uint8(ones(4, 4, 2, 3)), zeros(3, 3, 1, 1, 2), zeros(2, 1), zeros(3, 3, 1, 1, 2), zeros(2, 1)}
  {inv, 'dZ', 'separableBackward', randn(4, 4, 2, 3, 'single'), zeros(3, 3, 1, 1, 2), zeros(3, 3, 1, 1, 2), zeros(4, 4, 2, 2)}
  {inv, 'unknown option', 'separableBackward', randn(4, 4, 2, 3, 'single'), zeros(3, 3, 1, 1, 2), zeros(3, 3, 1, 1, 2), zeros(4, 4, 2), 'Budget', 1}
  {inv, 'overflows int64', 'backwardData', good, W, [1e9 1e9 4 2]}
  {inv, 'the value 1000000000000', 'backwardFilter', X, good, [3 3 4 3 1e12]}
  {'vkconv:unsupported', 'above the workspace limit of 1 bytes', 'forward', X, W, [], 'WorkspaceLimit', 1, 'Algorithm', 'im2col'}
  {inv, 'got a 0x0 double array', 'forward', X, W, [], 'Padding', []}
  {inv, '''Storage'' must be a character vector', 'forward', X, W, [], 'Storage', 16}
  {inv, 'device index 7 is out of range', 'device', 7}
  {inv, 'too many arguments', 'devices', 1}
  {inv, 'unknown option', 'device', '', 'Memory', 1}
};
for i = 1:numel(bad)
  if i == 4
    % Too many outputs: called directly, since expect_error asks for none.
    try
      [a, b, c] = vkconv('backwardFilter', X, good, size(W)); %#ok<ASGLU>
      error('test:noError', 'three outputs of backwardFilter gave no error');
    catch e
      assert(strcmp(e.identifier, inv) && ~isempty(strfind(e.message, 'at most 2 outputs')), e.message);
      printf('  ok %-24s %s\n', e.identifier, e.message);
    end
  else
    expect_error(bad{i}{:});
  end
  count = count + 1;
  assert(isequal(vkconv('forward', X, W, []), good), 'a good call after bad call %d gave another answer', i);
end

% A device that is not there: an error, and the device in use stays usable.
name = vkconv('device').name;
expect_error(inv, 'no device name contains ''no such device''', 'device', 'no such device');
assert(strcmp(vkconv('device').name, name));
% Out of device memory under a memory cap is an error the caller can handle; lifting the cap recovers.
vkconv('device', '', 'MemoryLimit', 65536);
expect_error('vkconv:outOfDeviceMemory', 'limit', 'forward', randn(64, 64, 4, 2, 'single'), W, []);
vkconv('device', '');
assert(isequal(vkconv('forward', X, W, []), good));
% `clear vkconv` releases the device (mexAtExit); the next call makes it again and gives the same answer.
clear vkconv;
assert(isequal(vkconv('forward', X, W, []), good));
count = count + 2;
printf('test_bad_input: %d bad calls, each a MATLAB error; Octave still running\n', count);
assert(count == numel(bad) + 2);
