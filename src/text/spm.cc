/*
 * spm.cc — the C-callable SentencePiece shim (see spm.h).  The only C++ in
 * latentq: it converts between SentencePiece's std::string/status API and
 * plain C arrays, catches exceptions, and nothing else.
 */
#include "text/spm.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

struct text_spm {
	sentencepiece::SentencePieceProcessor sp;
};

static char *
dup_string(const std::string &s)
{
	char *p = static_cast<char *>(std::malloc(s.size() + 1));
	if (p == nullptr) {
		std::abort();	/* host allocation failure exits (STYLE.md) */
	}
	std::memcpy(p, s.data(), s.size());
	p[s.size()] = '\0';
	return p;
}

extern "C" enum lq_status
text_spm_load(const char *path, struct text_spm **out, struct lq_error *err)
{
	*out = nullptr;
	text_spm *spm = new (std::nothrow) text_spm;
	if (spm == nullptr) {
		std::abort();
	}
	const auto status = spm->sp.Load(path);
	if (!status.ok()) {
		error_set(err, LQ_FAILED, "LQ-TOK-001",
		    "cannot load SentencePiece model %s: %s", path,
		    status.ToString().c_str());
		error_set_where(err, path, 0, 0);
		delete spm;
		return LQ_FAILED;
	}
	*out = spm;
	return LQ_OK;
}

extern "C" void
text_spm_free(struct text_spm *spm)
{
	delete spm;
}

extern "C" int
text_spm_encode(struct text_spm *spm, const char *text, size_t len,
    char ***pieces, struct lq_error *err)
{
	*pieces = nullptr;
	std::vector<std::string> sps;
	const auto status = spm->sp.Encode(std::string(text, len), &sps);
	if (!status.ok()) {
		error_set(err, LQ_FAILED, "LQ-TOK-002",
		    "SentencePiece cannot encode the prompt: %s",
		    status.ToString().c_str());
		return -1;
	}
	char **arr = static_cast<char **>(
	    std::calloc(sps.size() + 1, sizeof(char *)));
	if (arr == nullptr) {
		std::abort();
	}
	for (size_t i = 0; i < sps.size(); i++) {
		arr[i] = dup_string(sps[i]);
	}
	*pieces = arr;
	return static_cast<int>(sps.size());
}

extern "C" void
text_spm_pieces_free(char **pieces, int n)
{
	if (pieces == nullptr) {
		return;
	}
	for (int i = 0; i < n; i++) {
		std::free(pieces[i]);
	}
	std::free(pieces);
}

extern "C" int
text_spm_piece_to_id(const struct text_spm *spm, const char *piece)
{
	return spm->sp.PieceToId(piece);
}

extern "C" char *
text_spm_id_to_piece(const struct text_spm *spm, int id)
{
	if (id < 0 || id >= spm->sp.GetPieceSize()) {
		return nullptr;
	}
	return dup_string(spm->sp.IdToPiece(id));
}

extern "C" int
text_spm_piece_size(const struct text_spm *spm)
{
	return spm->sp.GetPieceSize();
}

extern "C" char *
text_spm_decode(const struct text_spm *spm, const int *ids, int n)
{
	std::vector<int> v(ids, ids + n);
	std::string out;
	if (!spm->sp.Decode(v, &out).ok()) {
		out.clear();
	}
	return dup_string(out);
}
