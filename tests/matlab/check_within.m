function check_within(what, got, ref, bound)
% Fails (an error naming `what`) unless got has ref's size and every |got - ref| <= bound (a scalar or
% one bound per value). A NaN in got fails too.
  if ~isequal(size(got), size(ref))
    error('test:size', '%s: size %s, expected %s', what, mat2str(size(got)), mat2str(size(ref)));
  end
  if isscalar(bound)
    bound = repmat(bound, size(ref));
  end
  err = abs(double(got) - ref);
  bad = ~(err <= bound);
  if any(bad(:))
    i = find(bad, 1);
    error('test:value', '%s: %d of %d values outside the bound (first at %d: got %.9g, expected %.9g, bound %.3g)', ...
          what, nnz(bad), numel(bad), i, double(got(i)), ref(i), bound(i));
  end
  printf('  ok %-64s max error %.3g (bound %.3g)\n', what, max(err(:)), max(bound(:)));
end
