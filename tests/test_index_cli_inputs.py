"""``hf-querygen index build`` input files: encodings, extensions, header lines and ids; every problem is
one error line naming file and line, and nothing is built."""

from __future__ import annotations

import json

import pytest

from hf_querygen.cli import main
from hf_querygen.retrieval import Index


def build(tmp_path, name: str, content: bytes, capsys) -> tuple[int, str]:
    docs = tmp_path / name
    docs.write_bytes(content)
    code = main(["index", "build", str(docs), str(tmp_path / "ix")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("d.tsv", b"a\tfine\nb\tcaf\xe9 latin-1\n", r"d.tsv:2: not valid UTF-8 \(byte 0xe9 at column 6\)"),
        ("d.txt", b"one\ntwo\x00three\n", r"d.txt:2: NUL byte"),
        ("d.jsonl", b'{"id": "a", "text": "x"}\n\xff\n', r"d.jsonl:2: not valid UTF-8"),
        ("d.csv", b"id,text\na,b\n", r"unknown extension '.csv'"),
        ("docs", b"just text\n", r"unknown extension '\(none\)'"),
        ("d.tsv", b"a\tone\n\ttwo\n", r"d.tsv:2: empty id"),
        ("d.tsv", b"a\tone\nb\ttwo\na\tthree\n", r"d.tsv:3: duplicate id 'a' \(first on line 1\)"),
        ("d.jsonl", b'{"id": 1, "text": "x"}\n{"id": 1, "text": "y"}\n', r"d.jsonl:2: duplicate id 1"),
        ("d.jsonl", b'{"id": 1.5, "text": "x"}\n', r"d.jsonl:1: id must be a string or an integer"),
        ("d.jsonl", b'{"id": "", "text": "x"}\n', r"d.jsonl:1: empty id"),
        ("d.jsonl", b'{"id": "a", "text": "x"}\n{"text": "y"}\n', r"d.jsonl:2: no 'id' field"),
        ("d.tsv", b"a\tone\nno tab here\n", r"d.tsv:2: expected id<TAB>text"),
    ],
)
def test_bad_input_files_name_file_and_line(tmp_path, capsys, name, content, message):
    import re

    code, err = build(tmp_path, name, content, capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("hf-querygen: error: "), err
    assert re.search(message, err), err
    assert not (tmp_path / "ix").exists()


def test_bom_and_header_line_are_not_documents(tmp_path, capsys):
    code, _ = build(tmp_path, "d.tsv", "\ufeffid\ttext\nd1\tred fox\nd2\tblue hen\n".encode(), capsys)
    assert code == 0
    index = Index.open(tmp_path / "ix")
    assert len(index) == 2 and index.search("red")[0].id == "d1"


def test_bom_in_a_txt_file_is_not_part_of_the_first_document(tmp_path, capsys):
    code, _ = build(tmp_path, "d.TXT", "\ufeffred fox\nblue hen\n".encode(), capsys)
    assert code == 0
    index = Index.open(tmp_path / "ix")
    assert index.stats.document_terms(0) == ["red", "fox"]


def test_jsonl_ids_keep_their_type(tmp_path, capsys):
    lines = [{"id": 7, "text": "red fox"}, {"id": 8, "text": "blue hen"}]
    code, _ = build(tmp_path, "d.jsonl", "".join(json.dumps(r) + "\n" for r in lines).encode(), capsys)
    assert code == 0 and Index.open(tmp_path / "ix").search("hen")[0].id == 8
