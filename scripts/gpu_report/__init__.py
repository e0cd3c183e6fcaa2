"""The GPU report: one command that measures vkconv on the Vulkan device at hand (scripts/gpu-report)."""
