classdef SeparableDlLayer < nnet.layer.Layer
% SeparableDlLayer  SeparableLayer as a MATLAB custom deep-learning layer, for dlnetwork (MATLAB only: GNU
% Octave has no nnet.layer.Layer; there, use SeparableLayer, which has the same predict and backward).
%
%   layer = SeparableDlLayer(C, 'Name', 'separable')
%
% Input 'SSCB' frames H x W x C x F (F = 3 x clips), output H x W x C x clips. The learnables are the two
% 3x3x1x1xC channel-wise kernels and their C x 1 biases; predict and backward run on the Vulkan device
% through the vkconv MEX: dlarray and gpuArray data are taken out first (extractdata, gather); predict returns
% a dlarray with the input's labels when given one, backward plain arrays.

  properties (Learnable)
    Kminus
    Bminus
    Kplus
    Bplus
  end

  properties
    Storage = 'single'
  end

  methods
    function layer = SeparableDlLayer(channels, varargin)
      inner = SeparableLayer(channels);
      layer.Kminus = inner.Kminus; layer.Bminus = inner.Bminus;
      layer.Kplus = inner.Kplus; layer.Bplus = inner.Bplus;
      layer.Description = sprintf('channel-wise separable layer, %d channels, on vkconv', channels);
      for i = 1:2:numel(varargin)
        layer.(varargin{i}) = varargin{i + 1};
      end
    end

    function Z = predict(layer, X)
      Z = vkconv('separableForward', SeparableDlLayer.host(X), SeparableDlLayer.host(layer.Kminus), ...
                 SeparableDlLayer.host(layer.Bminus), SeparableDlLayer.host(layer.Kplus), ...
                 SeparableDlLayer.host(layer.Bplus), 'Storage', layer.Storage);
      if isa(X, 'dlarray')
        Z = dlarray(Z, dims(X));
      end
    end

    function [dX, dKminus, dBminus, dKplus, dBplus] = backward(layer, X, ~, dZ, ~)
      [dX, dKminus, dKplus, dBminus, dBplus] = vkconv('separableBackward', SeparableDlLayer.host(X), ...
          SeparableDlLayer.host(layer.Kminus), SeparableDlLayer.host(layer.Kplus), SeparableDlLayer.host(dZ), ...
          'Storage', layer.Storage);
    end
  end

  methods (Static, Access = private)
    function A = host(A)
      if isa(A, 'dlarray'), A = extractdata(A); end
      if isa(A, 'gpuArray'), A = gather(A); end
    end
  end
end
