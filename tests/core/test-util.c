/*
 * test-util.c — the text helpers every message goes through: a bounded
 * copy never leaves a cut UTF-8 sequence (util_utf8_trim, error_set),
 * and a user's value quoted in a message is escaped and cut at a
 * character with "…" (util_text_fit); environment switches read 0/1 and
 * their words, and ignore anything else (util_env_switch).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "tests/test.h"

/* 1 when s is valid UTF-8 from end to end */
static int
valid_utf8(const char *s)
{
	uint32_t cp;
	for (size_t k; *s; s += k)
		if ((k = util_utf8_decode(s, &cp)) == 0)
			return 0;
	return 1;
}

int
main(void)
{
	/* every cut of "aé€𝄞" (1, 2, 3 and 4 byte characters) */
	const char *w = "a\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e";
	static const size_t whole[] = {0, 1, 3, 6, 10};
	for (size_t cut = 0; cut <= strlen(w); cut++) {
		char b[16];
		memcpy(b, w, cut);
		b[cut] = '\0';
		util_utf8_trim(b);
		size_t want = 0;
		for (size_t i = 0; i < 5; i++)
			if (whole[i] <= cut)
				want = whole[i];
		CHECK_INT(strlen(b), want);
		CHECK(valid_utf8(b));
	}
	/* ASCII and invalid bytes are left as they are */
	char a[] = "bf16";
	CHECK_STR(util_utf8_trim(a), "bf16");
	char x[] = "ab\x80";
	CHECK_STR(util_utf8_trim(x), "ab\x80");

	/* a message longer than its buffer: cut at a character */
	char *big = malloc(2001);
	for (int i = 0; i < 1000; i++)
		memcpy(big + 2 * i, "\xc3\xa9", 2);
	big[2000] = '\0';
	for (int pad = 0; pad < 2; pad++) {
		struct lq_error e;
		error_clear(&e);
		error_set(&e, LQ_FAILED, "LQ-TEST", "%.*s%s", pad, "x", big);
		CHECK(strlen(e.message) >= sizeof(e.message) - 2);
		CHECK(valid_utf8(e.message));
		error_set_hint(&e, "%.*s%s", pad, "x", big);
		CHECK(valid_utf8(e.hint));
	}

	/* util_text_fit: short values escaped, long ones cut with "…" */
	char buf[16];
	CHECK_STR(util_text_fit(buf, sizeof(buf), "bf16"), "bf16");
	CHECK_STR(util_text_fit(buf, sizeof(buf), "a\nb"), "a\\nb");
	util_text_fit(buf, sizeof(buf), big);
	CHECK(valid_utf8(buf));
	CHECK_INT(strlen(buf), 6 * 2 + 3);	/* 6 é, "…" */
	CHECK(strcmp(buf + strlen(buf) - 3, "\xe2\x80\xa6") == 0);
	free(big);

	static const struct { const char *v; int dflt, want; } sw[] = {
		{NULL, 1, 1}, {"", 0, 0}, {"0", 1, 0}, {"1", 0, 1},
		{"off", 1, 0}, {"OFF", 1, 0}, {"false", 1, 0}, {"no", 1, 0},
		{"on", 0, 1}, {"True", 0, 1}, {"yes", 0, 1},
		{"garbage", 0, 0}, {"garbage", 1, 1}, {"2", 0, 0},
	};
	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		if (sw[i].v == NULL)
			unsetenv("LATENTQ_TEST_SWITCH");
		else
			setenv("LATENTQ_TEST_SWITCH", sw[i].v, 1);
		CHECK_INT(util_env_switch("LATENTQ_TEST_SWITCH", sw[i].dflt),
		    sw[i].want);
	}
	return test_summary();
}
