// Umbrella header: the whole public API of vkconv, except interop.hpp (which needs the Vulkan headers)
// and testing.hpp (hooks for tests).
#pragma once

#include "vkconv/backward.hpp"
#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/error.hpp"
#include "vkconv/find.hpp"
#include "vkconv/gemm.hpp"
#include "vkconv/kernel.hpp"
#include "vkconv/npy.hpp"
#include "vkconv/plan.hpp"
#include "vkconv/pool.hpp"
#include "vkconv/problem.hpp"
#include "vkconv/recording.hpp"
#include "vkconv/reference.hpp"
#include "vkconv/tensor.hpp"
#include "vkconv/transpose.hpp"
#include "vkconv/tune.hpp"
