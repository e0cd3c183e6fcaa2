// Umbrella header: the whole public API of vkconv, except interop.hpp (which needs the Vulkan headers)
// and testing.hpp (hooks for tests).
#pragma once

#include "vkconv/algorithm.hpp"
#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/device.hpp"
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
