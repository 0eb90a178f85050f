/*
 * vk-leak.c — the smallest Vulkan program: create an instance, enumerate
 * its devices, destroy it.  No latentq code.  Under LeakSanitizer it shows
 * Mesa's lavapipe leak that tests/sanitizers/keep-icd.so avoids (see
 * there); tests/sanitizers/lsan-mesa.sh runs it.  Exits 77 without Vulkan.
 */
#include <stdio.h>

#include <vulkan/vulkan.h>

int
main(void)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkInstance inst;
	if (vkCreateInstance(&ci, NULL, &inst) != VK_SUCCESS)
		return 77;
	uint32_t n = 0;
	VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
	printf("vkEnumeratePhysicalDevices: %d, %u devices\n", (int)r, n);
	vkDestroyInstance(inst, NULL);
	return n > 0 ? 0 : 77;
}
