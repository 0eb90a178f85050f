# The queue database.  Migrations are embedded from schema/ in order.
SCHEMA_FILES = schema/0001_init.sql schema/0002_model_identity.sql \
	schema/0003_lease_token.sql schema/0004_failures.sql \
	schema/0005_webhooks.sql schema/0006_checkpoint_stage.sql
# Files of schema/ that PostgreSQL cannot share: its own version, same name.
SCHEMA_PG_FILES = schema/postgresql/0001_init.sql \
	schema/postgresql/0004_failures.sql schema/postgresql/0005_webhooks.sql \
	schema/postgresql/0006_checkpoint_stage.sql
EXTRA_DIST += $(SCHEMA_FILES) $(SCHEMA_PG_FILES)
libstore_a_SOURCES += \
	src/store/store.c src/store/store.h src/store/store-int.h \
	src/store/lite.c src/store/pg.c \
	src/store/integrity.c \
	src/store/jobs.c src/store/jobs.h
nodist_libstore_a_SOURCES += src/store/schema.gen.c \
	src/store/schema-pg.gen.c
BUILT_SOURCES += src/store/schema.gen.c src/store/schema-pg.gen.c
CLEANFILES += src/store/schema.gen.c src/store/schema-pg.gen.c
src/store/schema.gen.c: $(SCHEMA_FILES) embed$(EXEEXT)
	$(AM_V_GEN)./embed$(EXEEXT) $@ store_migrations \
	    $(foreach f,$(SCHEMA_FILES),$(notdir $(f))=$(srcdir)/$(f))
src/store/schema-pg.gen.c: $(SCHEMA_PG_FILES) embed$(EXEEXT)
	$(AM_V_GEN)./embed$(EXEEXT) $@ store_migrations_pg \
	    $(foreach f,$(SCHEMA_PG_FILES),$(notdir $(f))=$(srcdir)/$(f))

check_PROGRAMS += tests/store/test-store
TESTS += tests/store/test-store
tests_store_test_store_SOURCES = tests/store/test-store.c
tests_store_test_store_LDADD = $(LQ_TEST_LDADD)

# `make bench`: claims and checkpoint commits, SQLite against PostgreSQL
# (tests/bench/bench-store.sh starts the server).
EXTRA_PROGRAMS += tests/bench/bench-store
tests_bench_bench_store_SOURCES = tests/bench/bench-store.c
tests_bench_bench_store_LDADD = $(LQ_TEST_LDADD)
bench: tests/bench/bench-store$(EXEEXT)
