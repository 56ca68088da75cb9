"""The papers model cards cite, for the packages that share one (a new package may declare its own
:class:`~hf_querygen.specs.CardPaper` inline)."""

from ..specs import CardPaper

SONG2017 = CardPaper(
    "attentional RNN encoder-decoders (Song et al., SIGIR'17; Ding & Balog, ICTIR'18)",
    "Song, Kim, Park. Translation of Natural Language Query Into Keyword Query Using a RNN "
    "Encoder-Decoder. SIGIR 2017.",
    "@inproceedings{song2017translation,\n  title={Translation of Natural Language Query Into Keyword "
    "Query Using a RNN Encoder-Decoder},\n  author={Song, Hyun-Je and Kim, A-Yeong and Park, Seong-Bae},"
    "\n  booktitle={SIGIR},\n  year={2017}\n}",
)

_LIU2018_CITATION = (
    "Liu, Pan, Zhang, Jiang, Huang. Generating Keyword Queries for Natural Language Queries to "
    "Alleviate Lexical Chasm Problem. CIKM 2018."
)
_LIU2018_BIBTEX = (
    "@inproceedings{liu2018generating,\n  title={Generating Keyword Queries for Natural Language Queries"
    " to Alleviate Lexical Chasm Problem},\n  author={Liu, Xiaoyu and Pan, Shunda and Zhang, Qi and "
    "Jiang, Yu-Gang and Huang, Xuanjing},\n  booktitle={CIKM},\n  year={2018}\n}"
)
LIU2018 = CardPaper(
    "the dual-decoder keyword-query generator of Liu et al. (CIKM'18)", _LIU2018_CITATION, _LIU2018_BIBTEX
)
LIU2018_JOINT = CardPaper(
    "the joint ATS2S+SL baseline of Liu et al. (CIKM'18)", _LIU2018_CITATION, _LIU2018_BIBTEX
)

LIN2017 = CardPaper(
    "a BiLSTM sequence-labelling model (Liu et al. CIKM'18 baseline; Lin et al. 2017 segmenter)",
    "Lin, Di Fabbrizio, Datta. Query Segmentation via RNNs Encoder-Decoder Framework. eCOM@SIGIR 2017.",
    "@inproceedings{lin2017query,\n  title={Query Segmentation via RNNs Encoder-Decoder Framework},\n"
    "  author={Lin, Yiu-Chang and Di Fabbrizio, Giuseppe and Datta, Ankur},\n  booktitle={eCOM@SIGIR},"
    "\n  year={2017}\n}",
)

_ZHANG2020_CITATION = (
    "Zhang, Guo, Fan, Lan, Cheng. Query Understanding via Intent Description Generation. CIKM 2020."
)
_ZHANG2020_BIBTEX = (
    "@inproceedings{zhang2020query,\n  title={Query Understanding via Intent Description Generation},\n"
    "  author={Zhang, Ruqing and Guo, Jiafeng and Fan, Yixing and Lan, Yanyan and Cheng, Xueqi},\n"
    "  booktitle={CIKM},\n  year={2020}\n}"
)
ZHANG2020 = CardPaper(
    "the contrastive intent-description generator CtrsGen of Zhang et al. (CIKM'20)",
    _ZHANG2020_CITATION,
    _ZHANG2020_BIBTEX,
)
ZHANG2020_PG = CardPaper(
    "the query-based pointer-generator baseline of Zhang et al. (CIKM'20)",
    _ZHANG2020_CITATION,
    _ZHANG2020_BIBTEX,
)
