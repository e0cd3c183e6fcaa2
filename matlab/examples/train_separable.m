% TRAIN_SEPARABLE  A few training steps of SeparableLayer on the Vulkan device: a student layer learns a
% teacher layer's output from random frames, by mean squared error and plain gradient steps. In MATLAB
% with the Deep Learning Toolbox it trains SeparableDlLayer inside a dlnetwork instead (dlfeval,
% dlgradient and sgdmupdate). Sizes can be set before running it: frames, channels, height, width, steps.
%
%   addpath('<vkconv>/matlab', '<build>/matlab'); run('<vkconv>/matlab/examples/train_separable.m')

if ~exist('channels', 'var'), channels = 8; end
if ~exist('height', 'var'), height = 48; end
if ~exist('width', 'var'), width = 40; end
if ~exist('frames', 'var'), frames = 12; end
if ~exist('steps', 'var'), steps = 10; end
if ~exist('learning_rate', 'var'), learning_rate = 1; end
randn('state', 3);
teacher = SeparableLayer(channels);
teacher.Bminus = 0.1 * randn(channels, 1, 'single');
student = SeparableLayer(channels);
X = randn(height, width, channels, frames, 'single');
target = predict(teacher, X);
losses = zeros(steps, 1);
in_matlab = ~exist('OCTAVE_VERSION', 'builtin') && exist('dlnetwork', 'file') == 2;

if in_matlab
  net = dlnetwork([imageInputLayer([height width channels], 'Normalization', 'none'), ...
                   SeparableDlLayer(channels, 'Name', 'separable')]);
  velocity = [];
  for step = 1:steps
    [loss, gradients] = dlfeval(@(n, x, t) separable_loss(n, x, t), net, dlarray(X, 'SSCB'), target);
    [net, velocity] = sgdmupdate(net, gradients, velocity, learning_rate);
    losses(step) = double(extractdata(loss));
    fprintf('step %2d  loss %.6f\n', step, losses(step));
  end
else
  for step = 1:steps
    Z = predict(student, X);
    residual = Z - target;
    losses(step) = 0.5 * mean(residual(:) .^ 2);
    [~, dKminus, dBminus, dKplus, dBplus] = backward(student, X, Z, residual / numel(residual), []);
    student.Kminus = student.Kminus - learning_rate * dKminus;
    student.Bminus = student.Bminus - learning_rate * dBminus;
    student.Kplus = student.Kplus - learning_rate * dKplus;
    student.Bplus = student.Bplus - learning_rate * dBplus;
    fprintf('step %2d  loss %.6f\n', step, losses(step));
  end
end
if ~(losses(end) < 0.5 * losses(1))
  error('train_separable:noProgress', 'the loss went from %.6f to %.6f in %d steps', losses(1), losses(end), steps);
end

function [loss, gradients] = separable_loss(net, X, target)  % MATLAB's dlnetwork branch
  Z = forward(net, X);
  loss = 0.5 * mean((stripdims(Z) - target) .^ 2, 'all');
  gradients = dlgradient(loss, net.Learnables);
end
