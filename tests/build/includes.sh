#!/bin/sh
# tools/check-includes.sh: the tree passes, and a module that includes
# another module's library header is refused (the check can fail).
. "${top_srcdir:-.}/tests/cli/common.sh"

expect_status 0 sh "$top_srcdir/tools/check-includes.sh" "$top_srcdir"
mkdir -p "$T/src/render" "$T/src/store" "$T/src/media"
echo '#include <sqlite3.h>' > "$T/src/store/ok.c"
echo '#include <libavcodec/avcodec.h>' > "$T/src/media/ok.c"
expect_status 0 sh "$top_srcdir/tools/check-includes.sh" "$T"
printf '#include "x.h"\n  #include <sqlite3.h>\n' > "$T/src/render/bad.c"
expect_status 1 sh "$top_srcdir/tools/check-includes.sh" "$T"
expect_grep 'src/render/bad.c:2:.*only src/store/' "$T/err"
echo '#include <vulkan/vulkan.h>' > "$T/src/render/bad.c"
expect_status 1 sh "$top_srcdir/tools/check-includes.sh" "$T"
expect_grep 'only src/gpu/' "$T/err"
echo '#include <curl/curl.h>' > "$T/src/render/bad.c"
expect_status 1 sh "$top_srcdir/tools/check-includes.sh" "$T"
expect_grep 'only src/net/' "$T/err"
rm "$T/src/render/bad.c"
echo '#include <sodium.h>' > "$T/src/media/bad.c"
expect_status 1 sh "$top_srcdir/tools/check-includes.sh" "$T"
expect_grep 'src/media/bad.c:1:.*only src/core/' "$T/err"
echo '#include <archive.h>' > "$T/src/media/bad.c"
expect_status 0 sh "$top_srcdir/tools/check-includes.sh" "$T"
finish
