/*
 * spm.h — a thin C-callable shim over the SentencePiece C++ library.
 *
 * Only what the T5 tokenizer needs: load a model file, split normalised text
 * into pieces exactly as Python's `SentencePieceProcessor.encode(text,
 * out_type=str)` does, map a piece to its id (`piece_to_id`), and decode ids
 * back to text.  Everything T5-specific (added tokens, EOS, padding,
 * truncation) lives in tokenizer.c.
 *
 * Ownership: a `struct text_spm` is owned by the caller of text_spm_load and
 * released with text_spm_free.  Piece arrays returned by text_spm_encode are
 * caller-owned and released with text_spm_pieces_free.
 */
#ifndef LQ_TEXT_SPM_H
#define LQ_TEXT_SPM_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/error.h"

struct text_spm;

/*
 * Loads a SentencePiece model (`spiece.model`).  On failure returns
 * LQ_FAILED with code LQ-TOK-001 naming the path; *out is left NULL.
 */
enum lq_status text_spm_load(const char *path, struct text_spm **out,
    struct lq_error *err);

/* Releases the model; NULL is fine. */
void text_spm_free(struct text_spm *spm);

/*
 * Encodes `len` bytes of UTF-8 text into pieces (strings, NUL-terminated,
 * UTF-8 with U+2581 for spaces); for unknown characters the piece is the
 * normalised surface string, as in Python.  Sets *pieces (caller frees with
 * text_spm_pieces_free) and returns the number of pieces, or -1 with `err`
 * filled (LQ-TOK-002) when SentencePiece reports an error.
 */
int text_spm_encode(struct text_spm *spm, const char *text, size_t len,
    char ***pieces, struct lq_error *err);

/* Frees an array of `n` pieces from text_spm_encode. */
void text_spm_pieces_free(char **pieces, int n);

/* `sp.piece_to_id(piece)`: the id, or the unknown id for unknown pieces. */
int text_spm_piece_to_id(const struct text_spm *spm, const char *piece);

/* `sp.id_to_piece(id)` as a new string (caller frees), NULL if out of range. */
char *text_spm_id_to_piece(const struct text_spm *spm, int id);

/* Number of pieces in the model (`get_piece_size`). */
int text_spm_piece_size(const struct text_spm *spm);

/* `sp.decode(ids)` as a new NUL-terminated string (caller frees). */
char *text_spm_decode(const struct text_spm *spm, const int *ids, int n);

#ifdef __cplusplus
}
#endif

#endif
