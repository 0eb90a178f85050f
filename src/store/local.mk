# The queue database.  Migrations are embedded from schema/ in order.
SCHEMA_FILES = schema/0001_init.sql schema/0002_model_identity.sql \
	schema/0003_lease_token.sql schema/0004_failures.sql \
	schema/0005_webhooks.sql
EXTRA_DIST += $(SCHEMA_FILES)
libstore_a_SOURCES += \
	src/store/store.c src/store/store.h src/store/store-int.h \
	src/store/lite.c \
	src/store/integrity.c \
	src/store/jobs.c src/store/jobs.h
nodist_libstore_a_SOURCES += src/store/schema.gen.c
BUILT_SOURCES += src/store/schema.gen.c
CLEANFILES += src/store/schema.gen.c
src/store/schema.gen.c: $(SCHEMA_FILES) embed$(EXEEXT)
	$(AM_V_GEN)./embed$(EXEEXT) $@ store_migrations \
	    $(foreach f,$(SCHEMA_FILES),$(notdir $(f))=$(srcdir)/$(f))

check_PROGRAMS += tests/store/test-store
TESTS += tests/store/test-store
tests_store_test_store_SOURCES = tests/store/test-store.c
tests_store_test_store_LDADD = $(LQ_TEST_LDADD)
