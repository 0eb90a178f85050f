/*
 * keep-icd.c — (sanitizer builds only) an LD_PRELOAD shim that keeps Mesa's
 * lavapipe Vulkan ICD mapped when the Vulkan loader dlclose()s it.
 *
 * Why: lavapipe (libvulkan_lvp.so, Debian 12's Mesa 22.3) keeps a buffer it
 * realloc()s in a pthread_once initialiser in its static data.  The Vulkan
 * loader dlclose()s the ICD in vkDestroyInstance, the pointer leaves the
 * memory LeakSanitizer scans, and a 128-byte "leak" from <unknown module> is
 * reported at exit.  tests/sanitizers/vk-leak.c (no latentq code) reproduces
 * it and tests/sanitizers/lsan-mesa.sh checks that this shim is what makes it
 * go away.  A suppression rule cannot name it: the frames are in an unmapped
 * module, and matching glibc's __pthread_once_slow under it needs
 * fast_unwind_on_malloc=0, whose slow unwinder deadlocks in libgcc 12's
 * _Unwind_Find_FDE (object_mutex, taken again by the malloc interceptor while
 * the FDEs llvmpipe's JIT registered are sorted): every GPU test hung.
 *
 * Only the lavapipe ICD's handle is kept; every other dlclose() is passed
 * on.  latentq itself never calls dlopen() or dlclose().  Built without
 * -fsanitize (it is preloaded into uninstrumented processes too: sh, sqlite3,
 * ffmpeg).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>

int
dlclose(void *handle)
{
	static int (*next)(void *);
	struct link_map *map = NULL;

	if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map &&
	    map->l_name && strstr(map->l_name, "libvulkan_lvp.so"))
		return 0;
	if (!next)
		next = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	return next ? next(handle) : -1;
}
