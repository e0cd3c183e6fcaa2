// Workspace sizes checked against formulas written here from the problem's sizes (see docs/testing.md).
#include "conv_cases.hpp"
