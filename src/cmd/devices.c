/*
 * devices.c — `latentq devices [--json] [--device-caps FILE]`: list the
 * Vulkan devices with the facts preflight uses (or print a saved caps
 * file).  The JSON form, {"devices": [...]}, is what --device-caps reads.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "core/json.h"
#include "gpu/caps.h"
#include "gpu/gpu.h"

static void
print_caps(const struct device_caps *c)
{
	printf("device %d: %s\n", c->index, c->name);
	printf("  type:             %s\n", c->device_type);
	printf("  vendor/device id: 0x%04x/0x%04x\n", c->vendor_id, c->device_id);
	printf("  api version:      %s\n", c->api_version);
	printf("  driver:           %s %s (version %u)\n", c->driver_name,
	    c->driver_info, c->driver_version);
	printf("  uuid:             %s\n", c->uuid);
	for (int i = 0; i < c->heap_count; i++)
		printf("  heap %d:           %" PRIu64 " MiB%s\n", i,
		    c->heap_size[i] >> 20,
		    c->heap_device_local[i] ? " device-local" : "");
	printf("  maxStorageBufferRange:        %" PRIu64 "\n",
	    c->max_storage_buffer_range);
	printf("  maxMemoryAllocationSize:      %" PRIu64 "\n",
	    c->max_memory_allocation_size);
	printf("  maxComputeSharedMemorySize:   %u\n",
	    c->max_compute_shared_memory_size);
	printf("  maxComputeWorkGroupSize:      %u %u %u (invocations %u)\n",
	    c->max_workgroup_size[0], c->max_workgroup_size[1],
	    c->max_workgroup_size[2], c->max_workgroup_invocations);
	printf("  maxComputeWorkGroupCount:     %u %u %u\n",
	    c->max_workgroup_count[0], c->max_workgroup_count[1],
	    c->max_workgroup_count[2]);
	printf("  subgroup size:                %u\n", c->subgroup_size);
	printf("  fp16 %s, int8 %s, bf16 %s, 16-bit storage %s\n",
	    c->fp16 ? "yes" : "no", c->int8 ? "yes" : "no",
	    c->bf16 ? "yes" : "no", c->storage_16bit ? "yes" : "no");
}

static int
cmd_devices_exec(const struct cmd_globals *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"device-caps", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	int json = 0, ch;
	const char *caps_file = NULL;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'c':
			caps_file = optarg;
			break;
		default:
			return cmd_misuse(&cmd_devices_entry, NULL);
		}
	}
	if (optind != argc)
		return cmd_misuse(&cmd_devices_entry, "devices takes no arguments");
	struct lq_error err;
	error_clear(&err);
	struct device_caps *caps = NULL;
	int n = 0;
	if (caps_file != NULL) {
		caps = calloc(1, sizeof(*caps));
		if (caps == NULL)
			return EXIT_SOFTWARE;
		if (device_caps_load(caps_file, -1, caps, &err) != LQ_OK) {
			error_print(&err, stderr);
			free(caps);
			return EXIT_DATAERR;
		}
		n = 1;
	} else if (gpu_devices_list(&caps, &n, &err) != LQ_OK) {
		/* no driver or no device: this host cannot render */
		error_print(&err, stderr);
		return EXIT_UNAVAILABLE;
	}
	if (json) {
		cJSON *root = cJSON_CreateObject();
		cJSON *arr = cJSON_AddArrayToObject(root, "devices");
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, device_caps_to_json(&caps[i]));
		char *text = json_pretty(root);
		puts(text);
		free(text);
		cJSON_Delete(root);
	} else {
		for (int i = 0; i < n; i++)
			print_caps(&caps[i]);
	}
	free(caps);
	return 0;
}

const struct cmd_entry cmd_devices_entry = {
	.name = "devices",
	.usage = "[--json] [--device-caps FILE]",
	.summary = "list Vulkan devices and their limits",
	.exec = cmd_devices_exec,
};
