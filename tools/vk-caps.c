/*
 * vk-caps.c — what the Vulkan driver offers beyond `latentq devices`:
 * every device extension, the subgroup operations and sizes, and the
 * cooperative-matrix shapes (VK_KHR_cooperative_matrix, NVIDIA's
 * VK_NV_cooperative_matrix) a tensor-core GEMM would be built on.  Not
 * part of latentq: tools/device-check.sh compiles it into its bundle for
 * a GPU machine (issue 18 item 6).
 *
 *   cc -o vk-caps tools/vk-caps.c -lvulkan && ./vk-caps
 *
 * Debian 12's headers (1.3.239) predate VK_KHR_cooperative_matrix
 * (1.3.255), so its query's struct is declared here from the registry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

struct khr_coop_props {		/* VkCooperativeMatrixPropertiesKHR */
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	int32_t AType, BType, CType, ResultType;	/* VkComponentTypeKHR */
	VkBool32 saturatingAccumulation;
	int32_t scope;					/* VkScopeKHR */
};
#define KHR_COOP_PROPS_STYPE ((VkStructureType)1000506001)
typedef VkResult (*khr_coop_fn)(VkPhysicalDevice, uint32_t *,
    struct khr_coop_props *);

static const char *
component(int32_t t)
{
	static const char *const names[] = {"f16", "f32", "f64", "s8", "s16",
	    "s32", "s64", "u8", "u16", "u32", "u64"};
	if (t >= 0 && t < (int32_t)(sizeof(names) / sizeof(names[0])))
		return names[t];
	if (t == 1000141000)
		return "bf16";
	if (t == 1000491002 || t == 1000491003)
		return t == 1000491002 ? "e4m3" : "e5m2";
	return "?";
}

static const char *
device_type(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
	case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
	default: return "other";
	}
}

static int
has_ext(const VkExtensionProperties *e, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(e[i].extensionName, name) == 0)
			return 1;
	return 0;
}

static void
coop_khr(VkInstance inst, VkPhysicalDevice pd)
{
	khr_coop_fn f = (khr_coop_fn)vkGetInstanceProcAddr(inst,
	    "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
	uint32_t n = 0;
	if (f == NULL || f(pd, &n, NULL) != VK_SUCCESS) {
		printf("  cooperative matrix (KHR): query failed\n");
		return;
	}
	struct khr_coop_props *p = calloc(n ? n : 1, sizeof(*p));
	for (uint32_t i = 0; i < n; i++)
		p[i].sType = KHR_COOP_PROPS_STYPE;
	if (f(pd, &n, p) == VK_SUCCESS)
		for (uint32_t i = 0; i < n; i++)
			printf("  cooperative matrix (KHR): %ux%ux%u  A %s  B %s  "
			    "C %s  result %s%s  scope %d\n", p[i].MSize,
			    p[i].NSize, p[i].KSize, component(p[i].AType),
			    component(p[i].BType), component(p[i].CType),
			    component(p[i].ResultType),
			    p[i].saturatingAccumulation ? " (saturating)" : "",
			    p[i].scope);
	free(p);
}

static void
coop_nv(VkInstance inst, VkPhysicalDevice pd)
{
	PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV f =
	    (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
	    vkGetInstanceProcAddr(inst,
	    "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
	uint32_t n = 0;
	if (f == NULL || f(pd, &n, NULL) != VK_SUCCESS) {
		printf("  cooperative matrix (NV): query failed\n");
		return;
	}
	VkCooperativeMatrixPropertiesNV *p = calloc(n ? n : 1, sizeof(*p));
	for (uint32_t i = 0; i < n; i++)
		p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
	if (f(pd, &n, p) == VK_SUCCESS)
		for (uint32_t i = 0; i < n; i++)
			printf("  cooperative matrix (NV): %ux%ux%u  A %s  B %s  "
			    "C %s  D %s\n", p[i].MSize, p[i].NSize, p[i].KSize,
			    component(p[i].AType), component(p[i].BType),
			    component(p[i].CType), component(p[i].DType));
	free(p);
}

int
main(void)
{
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
	    .pApplicationName = "vk-caps", .apiVersion = VK_API_VERSION_1_3};
	VkInstanceCreateInfo ici = {
	    .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
	    .pApplicationInfo = &app};
	VkInstance inst;
	VkResult r = vkCreateInstance(&ici, NULL, &inst);
	if (r != VK_SUCCESS) {
		fprintf(stderr, "vk-caps: vkCreateInstance: %d\n", r);
		return 1;
	}
	uint32_t npd = 0;
	vkEnumeratePhysicalDevices(inst, &npd, NULL);
	VkPhysicalDevice *pds = calloc(npd ? npd : 1, sizeof(*pds));
	vkEnumeratePhysicalDevices(inst, &npd, pds);
	for (uint32_t d = 0; d < npd; d++) {
		VkPhysicalDeviceSubgroupSizeControlProperties sz = {
		    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
		VkPhysicalDeviceSubgroupProperties sg = {
		    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
		    .pNext = &sz};
		VkPhysicalDeviceDriverProperties drv = {
		    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
		    .pNext = &sg};
		VkPhysicalDeviceProperties2 p2 = {
		    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		    .pNext = &drv};
		vkGetPhysicalDeviceProperties2(pds[d], &p2);
		const VkPhysicalDeviceProperties *p = &p2.properties;
		printf("device %u: %s (%s), api %u.%u.%u, driver %s %s\n", d,
		    p->deviceName, device_type(p->deviceType), VK_API_VERSION_MAJOR(p->apiVersion),
		    VK_API_VERSION_MINOR(p->apiVersion),
		    VK_API_VERSION_PATCH(p->apiVersion), drv.driverName,
		    drv.driverInfo);
		printf("  subgroup size %u (min %u, max %u), stages 0x%x, "
		    "operations 0x%x (arithmetic %s, shuffle %s, clustered %s)\n",
		    sg.subgroupSize, sz.minSubgroupSize, sz.maxSubgroupSize,
		    sg.supportedStages, sg.supportedOperations,
		    sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT ?
		    "yes" : "no",
		    sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT ?
		    "yes" : "no",
		    sg.supportedOperations & VK_SUBGROUP_FEATURE_CLUSTERED_BIT ?
		    "yes" : "no");
		printf("  maxComputeSharedMemorySize %u, maxStorageBufferRange "
		    "%u, timestampPeriod %g ns\n",
		    p->limits.maxComputeSharedMemorySize,
		    p->limits.maxStorageBufferRange,
		    (double)p->limits.timestampPeriod);
		uint32_t ne = 0;
		vkEnumerateDeviceExtensionProperties(pds[d], NULL, &ne, NULL);
		VkExtensionProperties *e = calloc(ne ? ne : 1, sizeof(*e));
		vkEnumerateDeviceExtensionProperties(pds[d], NULL, &ne, e);
		if (has_ext(e, ne, "VK_KHR_cooperative_matrix"))
			coop_khr(inst, pds[d]);
		if (has_ext(e, ne, "VK_NV_cooperative_matrix"))
			coop_nv(inst, pds[d]);
		printf("  %u extensions:", ne);
		for (uint32_t i = 0; i < ne; i++)
			printf("%s%s", i % 3 ? "  " : "\n    ", e[i].extensionName);
		printf("\n");
		free(e);
	}
	free(pds);
	vkDestroyInstance(inst, NULL);
	return 0;
}
