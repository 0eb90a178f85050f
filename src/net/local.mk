# src/net: the HTTP client (libcurl; the only module that includes
# curl.h): resumable, verified downloads for `model pull`, webhook POSTs.
# Its own library, the only one compiled with libcurl's flags.
libnet_a_SOURCES += src/net/net.c src/net/net.h
liblatentq_a_SOURCES += src/cmd/pull.c src/cmd/pull.h
# A model folder named by a URL, crawled into its cache folder through
# net_fetch (no curl.h: liblatentq, as it asks model/ for the layout).
liblatentq_a_SOURCES += src/net/layout.c src/net/layout.h

# Tests against tests/net/server.py on 127.0.0.1 only.
NET_TESTS = tests/net/pull.sh tests/net/webhook.sh tests/net/download.sh
TESTS += $(NET_TESTS)
EXTRA_DIST += $(NET_TESTS) tests/net/server.py tests/net/common.sh
# Webhook delivery from the outbox (the supervisor's part); the outbox
# itself is SQL, so the store's library.
liblatentq_a_SOURCES += src/worker/webhooks.c src/worker/webhooks.h
libstore_a_SOURCES += src/store/webhooks.c src/store/webhooks.h
