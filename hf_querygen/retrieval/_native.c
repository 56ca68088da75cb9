/* hf_querygen.retrieval._native: the index build's per-token work in C (optional; the build falls back
 * to the Arrow path of analysis.py, which gives the same index, when this module is not compiled).
 *
 * ChunkEncoder(analyze, max_term_bytes, ascii_actions).encode(texts, first_row, caller) analyses a chunk
 * of documents and numbers their terms in one pass over the characters, with the GIL released:
 *
 *   ASCII documents:     each character mapped by ascii_actions (analysis.ASCII_ACTIONS, what the ASCII
 *                        path of analysis.analyze does with it: the character it becomes, or 254 for a
 *                        word boundary, 255 for a deleted character), split at the boundaries, terms of
 *                        max_term_bytes bytes or more dropped;
 *   other documents:     analyze(text) (Python, with the GIL), whose terms are numbered here.
 *
 * It returns (documents, term_ids, lengths): one tantivy JSON line per document,
 * {"row":<first_row + i>,"text":"<terms joined by single spaces>"} (JSON-escaped as json.dumps does with
 * ensure_ascii=False), every token's term id (int32, ids in order of first occurrence over every chunk
 * this encoder saw) and each document's term count (int64), the two as bytes in native byte order.
 * vocabulary() returns the terms by id.
 *
 * sort_positions, doc_postings and pair_follow: the sidecar statistics of stats.py from the term ids,
 * each in one or two passes over the tokens (the numpy version of stats.py gives the same arrays).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ growable byte buffer */
typedef struct {
    char *data;
    size_t size, capacity;
} Buffer;

static int buffer_reserve(Buffer *b, size_t extra) {
    if (b->size + extra <= b->capacity) return 0;
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + extra) capacity *= 2;
    char *data = realloc(b->data, capacity);
    if (!data) return -1;
    b->data = data;
    b->capacity = capacity;
    return 0;
}

static int buffer_write(Buffer *b, const void *src, size_t n) {
    if (buffer_reserve(b, n)) return -1;
    memcpy(b->data + b->size, src, n);
    b->size += n;
    return 0;
}

/* ------------------------------------------------------------------ one chunk's output */
/* one chunk's output; kept by the encoder from chunk to chunk, so that its buffers are allocated (and their
 * pages faulted in) once, not once per chunk */
typedef struct {
    Buffer json;          /* every document's JSON line, back to back */
    size_t *doc_ends;     /* per document: the end of its line in json */
    unsigned char *utf8;  /* per document: its line holds non-ASCII bytes */
    int64_t *lengths;     /* per document: its number of terms */
    size_t doc_capacity;  /* of the three per-document arrays */
    int32_t *ids;
    size_t num_ids, ids_capacity;
    Buffer scratch;       /* the current ASCII term */
} Output;

static int output_reserve_documents(Output *o, size_t num_docs) {
    if (num_docs <= o->doc_capacity) return 0;
    size_t *doc_ends = realloc(o->doc_ends, num_docs * sizeof(size_t));
    if (!doc_ends) return -1;
    o->doc_ends = doc_ends;
    unsigned char *utf8 = realloc(o->utf8, num_docs);
    if (!utf8) return -1;
    o->utf8 = utf8;
    int64_t *lengths = realloc(o->lengths, num_docs * sizeof(int64_t));
    if (!lengths) return -1;
    o->lengths = lengths;
    o->doc_capacity = num_docs;
    return 0;
}

static void output_free(Output *o) {
    free(o->json.data);
    free(o->doc_ends);
    free(o->utf8);
    free(o->lengths);
    free(o->ids);
    free(o->scratch.data);
}


/* ------------------------------------------------------------------ the vocabulary: term -> id */
typedef struct {
    PyObject_HEAD
    uint32_t *slots;        /* id + 1 per slot, 0: empty; open addressing, linear probing */
    size_t mask;            /* number of slots - 1 (a power of two) */
    uint64_t *hashes;       /* per id */
    size_t *offsets;        /* per id: where its bytes start in arena */
    uint32_t *term_lengths; /* per id */
    size_t num_terms, id_capacity;
    Buffer arena;           /* every term's UTF-8 bytes, back to back */
    PyObject *analyze;      /* the Python analyzer for non-ASCII documents */
    Py_ssize_t max_term_bytes;
    int busy;               /* an encode() running (it lets other threads run): a second caller is refused */
    uint16_t ascii_action[128]; /* per ASCII character: the character it becomes, or ACTION_DELETE / _SPACE */
    Output output;          /* the last chunk's, reused */
} ChunkEncoder;

static inline uint64_t hash_bytes(const unsigned char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a final mix (linear probing wants good low bits) */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static int vocabulary_grow_slots(ChunkEncoder *self) {
    size_t new_count = (self->mask + 1) * 2;
    uint32_t *slots = calloc(new_count, sizeof(uint32_t));
    if (!slots) return -1;
    size_t mask = new_count - 1;
    for (size_t id = 0; id < self->num_terms; id++) {
        size_t i = self->hashes[id] & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = (uint32_t)(id + 1);
    }
    free(self->slots);
    self->slots = slots;
    self->mask = mask;
    return 0;
}

/* The id of term s[0:n], added when new; -1 when memory runs out. Called without the GIL. */
static int64_t vocabulary_id(ChunkEncoder *self, const unsigned char *s, size_t n) {
    uint64_t h = hash_bytes(s, n);
    size_t i = h & self->mask;
    for (;;) {
        uint32_t slot = self->slots[i];
        if (!slot) break;
        size_t id = slot - 1;
        if (self->hashes[id] == h && self->term_lengths[id] == n &&
            memcmp(self->arena.data + self->offsets[id], s, n) == 0)
            return (int64_t)id;
        i = (i + 1) & self->mask;
    }
    if (self->num_terms >= INT32_MAX) return -1;
    if (self->num_terms == self->id_capacity) {
        size_t capacity = self->id_capacity * 2;
        uint64_t *hashes = realloc(self->hashes, capacity * sizeof(uint64_t));
        if (!hashes) return -1;
        self->hashes = hashes;
        size_t *offsets = realloc(self->offsets, capacity * sizeof(size_t));
        if (!offsets) return -1;
        self->offsets = offsets;
        uint32_t *lengths = realloc(self->term_lengths, capacity * sizeof(uint32_t));
        if (!lengths) return -1;
        self->term_lengths = lengths;
        self->id_capacity = capacity;
    }
    size_t id = self->num_terms;
    self->hashes[id] = h;
    self->offsets[id] = self->arena.size;
    self->term_lengths[id] = (uint32_t)n;
    if (buffer_write(&self->arena, s, n)) return -1;
    self->slots[i] = (uint32_t)(id + 1);
    self->num_terms++;
    if (self->num_terms * 2 > self->mask + 1 && vocabulary_grow_slots(self)) return -1;
    return (int64_t)id;
}

/* ------------------------------------------------------------------ ASCII analysis table */
/* ascii_actions' codes (analysis.ASCII_ACTIONS), and what the encoder keeps for them */
enum { TABLE_SPACE = 254, TABLE_DELETE = 255, ACTION_DELETE = 0xFF00, ACTION_SPACE = 0xFE00 };

/* ------------------------------------------------------------------ one chunk */
typedef struct {
    const unsigned char *data; /* ASCII text (NULL: the document's terms are in the term table) */
    Py_ssize_t length;
    Py_ssize_t first_term, num_terms; /* its range of the term table (non-ASCII documents) */
} Doc;

typedef struct {
    const unsigned char *data;
    Py_ssize_t length;
} Term;


static const char HEX[] = "0123456789abcdef";

/* a term, JSON-escaped as json.dumps(..., ensure_ascii=False) escapes it */
static int write_escaped(Buffer *b, const unsigned char *s, size_t n) {
    if (buffer_reserve(b, n * 6)) return -1;
    char *out = b->data + b->size;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
            case '"': *out++ = '"'; break;
            case '\\': *out++ = '\\'; break;
            case '\b': *out++ = 'b'; break;
            case '\f': *out++ = 'f'; break;
            case '\n': *out++ = 'n'; break;
            case '\r': *out++ = 'r'; break;
            case '\t': *out++ = 't'; break;
            default:
                *out++ = 'u'; *out++ = '0'; *out++ = '0';
                *out++ = HEX[c >> 4]; *out++ = HEX[c & 15];
        }
    }
    b->size = out - b->data;
    return 0;
}

/* {"row":<row>,"text":" */
static int write_prefix(Buffer *b, unsigned long long row) {
    static const char head[] = "{\"row\":", tail[] = ",\"text\":\"";
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + row % 10);
        row /= 10;
    } while (row);
    if (buffer_reserve(b, sizeof head + sizeof tail + (size_t)n)) return -1;
    char *out = b->data + b->size;
    memcpy(out, head, sizeof head - 1);
    out += sizeof head - 1;
    while (n) *out++ = digits[--n];
    memcpy(out, tail, sizeof tail - 1);
    out += sizeof tail - 1;
    b->size = (size_t)(out - b->data);
    return 0;
}

static int emit_term(ChunkEncoder *self, Output *o, const unsigned char *s, size_t n, int64_t *count) {
    int64_t id = vocabulary_id(self, s, n);
    if (id < 0) return -1;
    if (o->num_ids == o->ids_capacity) {
        size_t capacity = o->ids_capacity ? o->ids_capacity * 2 : 65536;
        int32_t *ids = realloc(o->ids, capacity * sizeof(int32_t));
        if (!ids) return -1;
        o->ids = ids;
        o->ids_capacity = capacity;
    }
    o->ids[o->num_ids++] = (int32_t)id;
    if (*count && buffer_write(&o->json, " ", 1)) return -1;
    (*count)++;
    return write_escaped(&o->json, s, n);
}

/* Every document's line, ids and length; 0, or -1 when memory runs out. Runs without the GIL. */
static int encode_documents(ChunkEncoder *self, const Doc *docs, Py_ssize_t num_docs, const Term *terms,
                            long long first_row, Output *o) {
    size_t max_term = (size_t)self->max_term_bytes;
    for (Py_ssize_t d = 0; d < num_docs; d++) {
        size_t line_start = o->json.size;
        if (write_prefix(&o->json, (unsigned long long)(first_row + d))) return -1;
        int64_t count = 0;
        const Doc *doc = &docs[d];
        if (doc->data) {
            o->scratch.size = 0;
            for (Py_ssize_t i = 0; i <= doc->length; i++) {
                uint16_t action = i < doc->length ? self->ascii_action[doc->data[i]] : ACTION_SPACE;
                if (action == ACTION_DELETE) continue;
                if (action == ACTION_SPACE) {
                    size_t n = o->scratch.size;
                    if (n && n < max_term &&
                        emit_term(self, o, (const unsigned char *)o->scratch.data, n, &count))
                        return -1;
                    o->scratch.size = 0;
                    continue;
                }
                if (o->scratch.size == o->scratch.capacity && buffer_reserve(&o->scratch, 1)) return -1;
                o->scratch.data[o->scratch.size++] = (char)action;
            }
        } else {
            for (Py_ssize_t t = doc->first_term; t < doc->first_term + doc->num_terms; t++)
                if (emit_term(self, o, terms[t].data, (size_t)terms[t].length, &count)) return -1;
        }
        if (buffer_write(&o->json, "\"}", 2)) return -1;
        o->doc_ends[d] = o->json.size;
        o->lengths[d] = count;
        o->utf8[d] = 0;
        if (!doc->data)
            for (size_t i = line_start; i < o->json.size; i++)
                if ((unsigned char)o->json.data[i] >= 0x80) {
                    o->utf8[d] = 1;
                    break;
                }
    }
    return 0;
}

static PyObject *ChunkEncoder_encode(ChunkEncoder *self, PyObject *args) {
    PyObject *texts;
    long long first_row;
    const char *caller;
    if (!PyArg_ParseTuple(args, "O!Ls", &PyList_Type, &texts, &first_row, &caller)) return NULL;
    if (first_row < 0) {
        PyErr_SetString(PyExc_ValueError, "ChunkEncoder.encode: first_row must be >= 0");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ChunkEncoder.encode: already running in another thread");
        return NULL;
    }
    /* the whole call holds the encoder: the Python analyzer (phase 1) and the work without the GIL (phase 2)
     * both let other threads run, and the vocabulary and the output buffers are this encoder's */
    self->busy = 1;
    Py_ssize_t num_docs = PyList_GET_SIZE(texts);
    PyObject *result = NULL, *keep = NULL, *documents = NULL;
    Doc *docs = calloc(num_docs ? num_docs : 1, sizeof(Doc));
    Term *terms = NULL;
    Py_ssize_t num_terms = 0, terms_capacity = 0;
    Output *o = &self->output;
    o->json.size = o->num_ids = o->scratch.size = 0;
    keep = PyList_New(0); /* the texts and analysed term lists whose bytes are read without the GIL */
    if (!docs || output_reserve_documents(o, (size_t)num_docs) || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyList_Append(keep, texts)) goto done;
    /* with the GIL: types, ASCII data, and the Python analyzer for the other documents */
    for (Py_ssize_t d = 0; d < num_docs; d++) {
        PyObject *text = PyList_GET_ITEM(texts, d);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "%s: text %zd is %s, not a string", caller, d,
                         Py_TYPE(text)->tp_name);
            goto done;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(text) < 0) goto done; /* a legacy string (deprecated C APIs) */
#endif
        if (PyUnicode_IS_ASCII(text)) {
            docs[d].data = PyUnicode_1BYTE_DATA(text);
            docs[d].length = PyUnicode_GET_LENGTH(text);
            continue;
        }
        PyObject *analysed = PyObject_CallOneArg(self->analyze, text);
        if (!analysed) goto done;
        if (PyList_Append(keep, analysed)) {
            Py_DECREF(analysed);
            goto done;
        }
        Py_DECREF(analysed);
        if (!PyList_Check(analysed)) {
            PyErr_SetString(PyExc_TypeError, "ChunkEncoder: analyze() must return a list of strings");
            goto done;
        }
        docs[d].first_term = num_terms;
        docs[d].num_terms = PyList_GET_SIZE(analysed);
        for (Py_ssize_t t = 0; t < docs[d].num_terms; t++) {
            PyObject *term = PyList_GET_ITEM(analysed, t);
            if (!PyUnicode_Check(term)) {
                PyErr_SetString(PyExc_TypeError, "ChunkEncoder: analyze() must return a list of strings");
                goto done;
            }
            if (num_terms == terms_capacity) {
                terms_capacity = terms_capacity ? terms_capacity * 2 : 1024;
                Term *grown = realloc(terms, terms_capacity * sizeof(Term));
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                terms = grown;
            }
            Py_ssize_t n;
            const char *utf8 = PyUnicode_AsUTF8AndSize(term, &n); /* cached in the str object */
            if (!utf8) goto done;
            terms[num_terms].data = (const unsigned char *)utf8;
            terms[num_terms].length = n;
            num_terms++;
        }
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = encode_documents(self, docs, num_docs, terms, first_row, o);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    documents = PyList_New(num_docs);
    if (!documents) goto done;
    size_t start = 0;
    for (Py_ssize_t d = 0; d < num_docs; d++) {
        size_t n = o->doc_ends[d] - start;
        PyObject *line;
        if (o->utf8[d]) {
            line = PyUnicode_DecodeUTF8(o->json.data + start, (Py_ssize_t)n, "strict");
        } else {
            line = PyUnicode_New((Py_ssize_t)n, 127);
            if (line) memcpy(PyUnicode_1BYTE_DATA(line), o->json.data + start, n);
        }
        if (!line) goto done;
        PyList_SET_ITEM(documents, d, line);
        start = o->doc_ends[d];
    }
    PyObject *ids = PyBytes_FromStringAndSize((const char *)o->ids, (Py_ssize_t)(o->num_ids * sizeof(int32_t)));
    PyObject *lengths = PyBytes_FromStringAndSize((const char *)o->lengths, num_docs * (Py_ssize_t)sizeof(int64_t));
    if (ids && lengths) result = PyTuple_Pack(3, documents, ids, lengths);
    Py_XDECREF(ids);
    Py_XDECREF(lengths);
done:
    Py_XDECREF(documents);
    Py_XDECREF(keep);
    free(docs);
    free(terms);
    self->busy = 0;
    return result;
}

static PyObject *ChunkEncoder_vocabulary(ChunkEncoder *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ChunkEncoder.vocabulary: an encode() is running in another thread");
        return NULL;
    }
    PyObject *vocabulary = PyList_New((Py_ssize_t)self->num_terms);
    if (!vocabulary) return NULL;
    for (size_t id = 0; id < self->num_terms; id++) {
        PyObject *term = PyUnicode_DecodeUTF8(self->arena.data + self->offsets[id],
                                              (Py_ssize_t)self->term_lengths[id], "strict");
        if (!term) {
            Py_DECREF(vocabulary);
            return NULL;
        }
        PyList_SET_ITEM(vocabulary, (Py_ssize_t)id, term);
    }
    return vocabulary;
}

static Py_ssize_t ChunkEncoder_len(ChunkEncoder *self) { return (Py_ssize_t)self->num_terms; }

static int ChunkEncoder_init(ChunkEncoder *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"analyze", "max_term_bytes", "ascii_actions", NULL};
    PyObject *analyze;
    Py_ssize_t max_term_bytes, num_actions;
    const unsigned char *actions;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Ony#", keywords, &analyze, &max_term_bytes, &actions,
                                     &num_actions))
        return -1;
    if (!PyCallable_Check(analyze) || max_term_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "ChunkEncoder(analyze, max_term_bytes): a callable and a positive size");
        return -1;
    }
    /* the JSON lines of ASCII documents stay ASCII: a character becomes an ASCII one, a boundary or nothing */
    int actions_ok = num_actions == 128;
    for (Py_ssize_t c = 0; actions_ok && c < num_actions; c++)
        actions_ok = actions[c] < 128 || actions[c] == TABLE_SPACE || actions[c] == TABLE_DELETE;
    if (!actions_ok) {
        PyErr_SetString(PyExc_ValueError,
                        "ChunkEncoder: ascii_actions must be 128 bytes, each < 128, 254 (boundary) or 255 (deleted)");
        return -1;
    }
    if (self->slots) {
        PyErr_SetString(PyExc_RuntimeError, "ChunkEncoder: already initialised");
        return -1;
    }
    for (int c = 0; c < 128; c++)
        self->ascii_action[c] = actions[c] == TABLE_SPACE    ? ACTION_SPACE
                                : actions[c] == TABLE_DELETE ? ACTION_DELETE
                                                             : actions[c];
    Py_INCREF(analyze);
    self->analyze = analyze;
    self->max_term_bytes = max_term_bytes;
    self->mask = (1 << 16) - 1;
    self->slots = calloc(self->mask + 1, sizeof(uint32_t));
    self->id_capacity = 1 << 15;
    self->hashes = malloc(self->id_capacity * sizeof(uint64_t));
    self->offsets = malloc(self->id_capacity * sizeof(size_t));
    self->term_lengths = malloc(self->id_capacity * sizeof(uint32_t));
    if (!self->slots || !self->hashes || !self->offsets || !self->term_lengths) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void ChunkEncoder_dealloc(ChunkEncoder *self) {
    Py_XDECREF(self->analyze);
    free(self->slots);
    free(self->hashes);
    free(self->offsets);
    free(self->term_lengths);
    free(self->arena.data);
    output_free(&self->output);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef ChunkEncoder_methods[] = {
    {"encode", (PyCFunction)ChunkEncoder_encode, METH_VARARGS,
     "encode(texts: list, first_row: int, caller: str) -> (documents: list[str], term_ids: bytes (int32), "
     "lengths: bytes (int64))"},
    {"vocabulary", (PyCFunction)ChunkEncoder_vocabulary, METH_NOARGS, "The terms by id."},
    {NULL}};

static PySequenceMethods ChunkEncoder_as_sequence = {.sq_length = (lenfunc)ChunkEncoder_len};

static PyTypeObject ChunkEncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hf_querygen.retrieval._native.ChunkEncoder",
    .tp_basicsize = sizeof(ChunkEncoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Analyses chunks of documents into tantivy JSON lines and term ids (see the module).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ChunkEncoder_init,
    .tp_dealloc = (destructor)ChunkEncoder_dealloc,
    .tp_methods = ChunkEncoder_methods,
    .tp_as_sequence = &ChunkEncoder_as_sequence,
};

/* ------------------------------------------------------------------ statistics
 * The sidecar arrays of stats.CollectionStats.from_token_ids, each in one or two passes over the tokens
 * (numpy needs a radix argsort and several gathers). The caller allocates every output. */

/* A buffer argument of the expected item size; its item count in *count. */
static int item_count(Py_buffer *b, Py_ssize_t item_size, const char *name, Py_ssize_t *count) {
    if (b->len % item_size) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not a whole number of %zd-byte items", name, b->len,
                     item_size);
        return -1;
    }
    *count = b->len / item_size;
    return 0;
}

/* A collection the statistics can walk: every document length >= 0, the lengths summing to the n tokens
 * (checked without overflow), every term id in [0, vocab_size). 0, or -1. */
static int check_collection(const int32_t *tokens, Py_ssize_t n, const int64_t *lengths, Py_ssize_t num_docs,
                            Py_ssize_t vocab_size) {
    int64_t total = 0;
    for (Py_ssize_t d = 0; d < num_docs; d++) {
        if (lengths[d] < 0 || lengths[d] > n - total) return -1;
        total += lengths[d];
    }
    if (total != n) return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab_size) return -1;
    return 0;
}

/* sort_positions(tokens, doc_lengths, vocab_size, positions, pos_doc, pos_ptr) */
static PyObject *sort_positions(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer tokens_b, lengths_b, positions_b, pos_doc_b, pos_ptr_b;
    Py_ssize_t vocab_size, n, num_docs, n_positions, n_pos_doc, n_ptr;
    if (!PyArg_ParseTuple(args, "y*y*nw*w*w*", &tokens_b, &lengths_b, &vocab_size, &positions_b, &pos_doc_b,
                          &pos_ptr_b))
        return NULL;
    PyObject *result = NULL;
    int64_t *next = NULL;
    if (item_count(&tokens_b, 4, "tokens", &n) || item_count(&lengths_b, 8, "doc_lengths", &num_docs) ||
        item_count(&positions_b, 8, "positions", &n_positions) || item_count(&pos_doc_b, 4, "pos_doc", &n_pos_doc) ||
        item_count(&pos_ptr_b, 8, "pos_ptr", &n_ptr))
        goto done;
    if (vocab_size < 0 || n_positions != n || n_pos_doc != n || n_ptr != vocab_size + 1) {
        PyErr_SetString(PyExc_ValueError, "sort_positions: outputs of |C|, |C| and V + 1 items expected");
        goto done;
    }
    const int32_t *tokens = tokens_b.buf;
    const int64_t *lengths = lengths_b.buf;
    if (check_collection(tokens, n, lengths, num_docs, vocab_size)) {
        PyErr_SetString(PyExc_ValueError,
                        "sort_positions: document lengths must be >= 0 and sum to the tokens, term ids in [0, V)");
        goto done;
    }
    next = malloc(((size_t)vocab_size + 1) * sizeof(int64_t));
    if (!next) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *positions = positions_b.buf, *pos_ptr = pos_ptr_b.buf;
    int32_t *pos_doc = pos_doc_b.buf;
    Py_BEGIN_ALLOW_THREADS
    memset(pos_ptr, 0, ((size_t)vocab_size + 1) * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < n; i++) pos_ptr[tokens[i] + 1]++;
    for (Py_ssize_t v = 0; v < vocab_size; v++) pos_ptr[v + 1] += pos_ptr[v];
    memcpy(next, pos_ptr, ((size_t)vocab_size + 1) * sizeof(int64_t));
    Py_ssize_t i = 0;
    for (Py_ssize_t d = 0; d < num_docs; d++)
        for (int64_t end = i + lengths[d]; i < end; i++) {
            int64_t slot = next[tokens[i]]++;
            positions[slot] = i;
            pos_doc[slot] = (int32_t)d;
        }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(next);
    PyBuffer_Release(&tokens_b);
    PyBuffer_Release(&lengths_b);
    PyBuffer_Release(&positions_b);
    PyBuffer_Release(&pos_doc_b);
    PyBuffer_Release(&pos_ptr_b);
    return result;
}

/* doc_postings(pos_doc, pos_ptr, post_docs, post_tfs, doc_ptr) -> P: one posting per run of a document
 * within a term's positions; post_docs / post_tfs hold |C| items, the first P are written. */
static PyObject *doc_postings(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer pos_doc_b, pos_ptr_b, docs_b, tfs_b, doc_ptr_b;
    Py_ssize_t n, n_ptr, n_docs, n_tfs, n_doc_ptr;
    if (!PyArg_ParseTuple(args, "y*y*w*w*w*", &pos_doc_b, &pos_ptr_b, &docs_b, &tfs_b, &doc_ptr_b)) return NULL;
    PyObject *result = NULL;
    if (item_count(&pos_doc_b, 4, "pos_doc", &n) || item_count(&pos_ptr_b, 8, "pos_ptr", &n_ptr) ||
        item_count(&docs_b, 4, "post_docs", &n_docs) || item_count(&tfs_b, 4, "post_tfs", &n_tfs) ||
        item_count(&doc_ptr_b, 8, "doc_ptr", &n_doc_ptr))
        goto done;
    const int64_t *pos_ptr = pos_ptr_b.buf;
    if (n_ptr < 1 || n_docs != n || n_tfs != n || n_doc_ptr != n_ptr || pos_ptr[0] != 0 || pos_ptr[n_ptr - 1] != n) {
        PyErr_SetString(PyExc_ValueError, "doc_postings: pos_ptr must span pos_doc; outputs of |C|, |C|, V + 1");
        goto done;
    }
    for (Py_ssize_t v = 0; v + 1 < n_ptr; v++)
        if (pos_ptr[v + 1] < pos_ptr[v]) {
            PyErr_SetString(PyExc_ValueError, "doc_postings: pos_ptr must not decrease");
            goto done;
        }
    const int32_t *pos_doc = pos_doc_b.buf;
    int32_t *post_docs = docs_b.buf, *post_tfs = tfs_b.buf;
    int64_t *doc_ptr = doc_ptr_b.buf, count = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t v = 0; v + 1 < n_ptr; v++) {
        doc_ptr[v] = count;
        for (int64_t k = pos_ptr[v]; k < pos_ptr[v + 1]; k++) {
            if (k == pos_ptr[v] || pos_doc[k] != pos_doc[k - 1]) {
                post_docs[count] = pos_doc[k];
                post_tfs[count++] = 1;
            } else {
                post_tfs[count - 1]++;
            }
        }
    }
    doc_ptr[n_ptr - 1] = count;
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(count);
done:
    PyBuffer_Release(&pos_doc_b);
    PyBuffer_Release(&pos_ptr_b);
    PyBuffer_Release(&docs_b);
    PyBuffer_Release(&tfs_b);
    PyBuffer_Release(&doc_ptr_b);
    return result;
}

/* pair_follow(tokens, doc_lengths, slot, reaches, follow): follow[r, i, j] += the positions holding a term
 * of slot i with a term of slot j among the reaches[r] positions after it in its document (slot: int16
 * per term id, -1 for terms outside the table; reaches: int64, ascending; follow: int64 (R, F, F)). */
static PyObject *pair_follow(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer tokens_b, lengths_b, slot_b, reaches_b, follow_b;
    Py_ssize_t n, num_docs, vocab_size, num_reaches, n_follow;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &tokens_b, &lengths_b, &slot_b, &reaches_b, &follow_b)) return NULL;
    PyObject *result = NULL;
    if (item_count(&tokens_b, 4, "tokens", &n) || item_count(&lengths_b, 8, "doc_lengths", &num_docs) ||
        item_count(&slot_b, 2, "slot", &vocab_size) || item_count(&reaches_b, 8, "reaches", &num_reaches) ||
        item_count(&follow_b, 8, "follow", &n_follow))
        goto done;
    const int32_t *tokens = tokens_b.buf;
    const int64_t *lengths = lengths_b.buf, *reaches = reaches_b.buf;
    const int16_t *slot = slot_b.buf;
    int64_t *follow = follow_b.buf;
    int64_t num_slots = 0;
    for (Py_ssize_t v = 0; v < vocab_size; v++)
        if (slot[v] >= num_slots) num_slots = slot[v] + 1;
    int reaches_ok = num_reaches >= 1 && reaches[0] >= 1 && reaches[num_reaches - 1] <= 64;
    for (Py_ssize_t r = 1; r < num_reaches; r++) reaches_ok &= reaches[r] > reaches[r - 1];
    if (check_collection(tokens, n, lengths, num_docs, vocab_size) || !reaches_ok ||
        n_follow != num_reaches * num_slots * num_slots) {
        PyErr_SetString(PyExc_ValueError,
                        "pair_follow: lengths summing to the tokens, ids in [0, len(slot)), ascending reaches in "
                        "[1, 64], follow of (R, F, F) items");
        goto done;
    }
    const int64_t reach = reaches[num_reaches - 1];
    Py_BEGIN_ALLOW_THREADS
    int64_t i = 0;
    for (Py_ssize_t d = 0; d < num_docs; d++) {
        const int64_t end = i + lengths[d];
        for (; i < end; i++) {
            const int16_t a = slot[tokens[i]];
            if (a < 0) continue;
            int16_t seen[64];
            int num_seen = 0;
            for (int64_t offset = 1; offset <= reach && i + offset < end; offset++) {
                const int16_t b = slot[tokens[i + offset]];
                if (b < 0) continue;
                int repeated = 0;
                for (int k = 0; k < num_seen; k++) repeated |= seen[k] == b;
                if (repeated) continue; /* counted at its first occurrence after i */
                seen[num_seen++] = b;
                for (Py_ssize_t r = num_reaches - 1; r >= 0 && reaches[r] >= offset; r--)
                    follow[(r * num_slots + a) * num_slots + b]++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&tokens_b);
    PyBuffer_Release(&lengths_b);
    PyBuffer_Release(&slot_b);
    PyBuffer_Release(&reaches_b);
    PyBuffer_Release(&follow_b);
    return result;
}

static PyMethodDef module_methods[] = {
    {"sort_positions", sort_positions, METH_VARARGS,
     "sort_positions(tokens int32, doc_lengths int64, vocab_size, positions int64 out, pos_doc int32 out, "
     "pos_ptr int64 out): token positions grouped by term id (a stable counting sort), their documents, and "
     "each term's range."},
    {"doc_postings", doc_postings, METH_VARARGS,
     "doc_postings(pos_doc int32, pos_ptr int64, post_docs int32 out, post_tfs int32 out, doc_ptr int64 out) "
     "-> P: each term's (document, tf) postings; the first P items of post_docs / post_tfs are written."},
    {"pair_follow", pair_follow, METH_VARARGS,
     "pair_follow(tokens int32, doc_lengths int64, slot int16, reaches int64, follow int64 out): the pair "
     "table's window counts, added to follow (R, F, F)."},
    {NULL}};

static struct PyModuleDef native_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "The index build's per-token work in C (see hf_querygen/retrieval/_native.c).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&ChunkEncoderType) < 0) return NULL;
    PyObject *module = PyModule_Create(&native_module);
    if (!module) return NULL;
    if (PyModule_AddObjectRef(module, "ChunkEncoder", (PyObject *)&ChunkEncoderType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
