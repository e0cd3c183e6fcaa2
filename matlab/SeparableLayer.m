classdef SeparableLayer
% SeparableLayer  The channel-wise separable layer of a video model, computed on a Vulkan device by vkconv.
%
%   Frames X (H x W x C x F, 'SSCB', F = 3 x clips) are regrouped as clips of three consecutive time steps
%   f1, f2, f3, and each clip gives
%       Z = dlconv(f2 - f1, Kminus) + Bminus + f2 + dlconv(f2 - f3, Kplus) + Bplus
%   with two 3x3 channel-wise convolutions ('same' padding, one filter per channel). Z is H x W x C x clips.
%
%   predict and backward have the signatures of a MATLAB custom layer's; the whole layer (regrouping,
%   differences, both convolutions, biases, residual) runs on the device in one vkconv call per pass, the
%   frames uploaded once per call, no per-time-step copy made on the host and no accumarray.
%
%   layer = SeparableLayer(C)                      He-initialised kernels, zero biases
%   layer = SeparableLayer(C, 'Storage', 'bf16')   device tensors in bf16 ('single', 'f16' or 'bf16')
%   Z = predict(layer, X)
%   [dX, dKminus, dBminus, dKplus, dBplus] = backward(layer, X, Z, dZ, memory)
%
%   For MATLAB's dlnetwork use SeparableDlLayer, which wraps this class in nnet.layer.Layer.

  properties
    Kminus    % 3 x 3 x 1 x 1 x C
    Bminus    % C x 1
    Kplus     % 3 x 3 x 1 x 1 x C
    Bplus     % C x 1
    Storage = 'single'
    WorkspaceBudget = 0   % device bytes beyond the operands (0: a fifth of each call's operands)
  end

  methods
    function layer = SeparableLayer(channels, varargin)
      if nargin < 1 || ~isscalar(channels) || channels < 1 || channels ~= fix(channels)
        error('vkconv:invalidArgument', 'SeparableLayer(C): C must be a positive whole number of channels');
      end
      scale = single(sqrt(2 / 9));
      layer.Kminus = scale * randn(3, 3, 1, 1, channels, 'single');
      layer.Kplus = scale * randn(3, 3, 1, 1, channels, 'single');
      layer.Bminus = zeros(channels, 1, 'single');
      layer.Bplus = zeros(channels, 1, 'single');
      for i = 1:2:numel(varargin)
        layer.(varargin{i}) = varargin{i + 1};
      end
    end

    function Z = predict(layer, X)
      Z = vkconv('separableForward', X, layer.Kminus, layer.Bminus, layer.Kplus, layer.Bplus, ...
                 'Storage', layer.Storage, 'WorkspaceBudget', layer.WorkspaceBudget);
    end

    function [dX, dKminus, dBminus, dKplus, dBplus] = backward(layer, X, ~, dZ, ~)
      [dX, dKminus, dKplus, dBminus, dBplus] = vkconv('separableBackward', X, layer.Kminus, layer.Kplus, dZ, ...
          'Storage', layer.Storage, 'WorkspaceBudget', layer.WorkspaceBudget);
    end
  end
end
