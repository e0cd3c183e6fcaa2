function pads = ref_pads(data_size, weights_size, stride, dilation, padding)
% The padding [top bottom left right] of a convolution, as dlconv defines it: 'same' pads the
% dilated filter's reach so that the output is ceil(input / stride), the odd row or column at the
% end; numbers follow vkconv('forward')'s forms (scalar, [vertical horizontal], 2x2
% [top left; bottom right], or [top bottom left right]).
  if ischar(padding)
    pads = zeros(1, 4);
    for a = 1:2
      reach = dilation(a) * (weights_size(a) - 1) + 1;
      total = max((ceil(data_size(a) / stride(a)) - 1) * stride(a) + reach - data_size(a), 0);
      pads(2 * a - 1) = floor(total / 2);
      pads(2 * a) = total - floor(total / 2);
    end
  elseif isscalar(padding)
    pads = repmat(padding, 1, 4);
  elseif numel(padding) == 2
    pads = [padding(1) padding(1) padding(2) padding(2)];
  else
    pads = padding(:)';  % a 2x2 [top left; bottom right] reads top, bottom, left, right column-major
  end
end
