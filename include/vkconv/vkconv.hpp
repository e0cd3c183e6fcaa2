// Umbrella header: the whole public API of vkconv.
#pragma once

#include "vkconv/backward.hpp"
#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/error.hpp"
#include "vkconv/find.hpp"
#include "vkconv/gemm.hpp"
#include "vkconv/kernel.hpp"
#include "vkconv/npy.hpp"
#include "vkconv/pool.hpp"
#include "vkconv/problem.hpp"
#include "vkconv/reference.hpp"
#include "vkconv/tensor.hpp"
