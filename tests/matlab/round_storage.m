function y = round_storage(x, storage)
% Values as a 16-bit tensor stores them: rounded to nearest, ties to even, to fp16 (10 fraction
% bits, exponents from -14, subnormals below) or bf16 (7 fraction bits, fp32's exponents); single
% values pass through. Returned as double, exactly.
  x = double(single(x));
  switch lower(storage)
    case 'single'
      y = x; return;
    case {'f16', 'half'}
      bits = 10; min_exponent = -14;
    case 'bf16'
      bits = 7; min_exponent = -126;
  end
  [~, e] = log2(abs(x));                       % |x| = f * 2^e with f in [0.5, 1)
  e = max(e - 1, min_exponent);                % the binade, floored at the subnormal range
  quantum = 2 .^ (e - bits);
  scaled = x ./ quantum;
  r = round(scaled);
  tie = abs(scaled - fix(scaled)) == 0.5;      % ties go to the even neighbour
  r(tie) = 2 * round(scaled(tie) / 2);
  y = r .* quantum;
  y(x == 0) = 0;
end
