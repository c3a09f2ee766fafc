"""The models of one process share one TLS context, built as the SDK would build its own
(``formctl.agent.models._sdk.ssl_context``): reading the trusted certificates costs ~20 ms, and
a host (or a test run) that makes a model per conversation paid it for every one."""

from __future__ import annotations

import ssl
import sys
from importlib import import_module

import anthropic
import pytest

from fake_anthropic import FakeAnthropic, text
from formctl.agent.models._sdk import ssl_context
from formctl.agent.models.anthropic import AnthropicModel
from formctl.agent.models.base import ModelRequest

_LOADS = {"load_verify_locations", "load_default_certs", "set_default_verify_paths"}


def _certificate_loads(work) -> int:
    """How many times ``work()`` read trusted certificates into a TLS context (in this thread)."""
    loads = 0

    def watch(frame, event, arg):
        nonlocal loads
        if event == "c_call" and getattr(arg, "__name__", "") in _LOADS:
            loads += 1

    sys.setprofile(watch)
    try:
        work()
    finally:
        sys.setprofile(None)
    return loads


def _library():
    """The HTTP library under the installed SDK (httpx2, or httpx for older SDKs)."""
    root = next(
        b.__module__.split(".")[0]
        for b in anthropic.DefaultHttpxClient.__mro__
        if b.__module__.split(".")[0] in ("httpx2", "httpx")
    )
    return import_module(root)


def test_five_models_answering_read_the_trusted_certificates_at_most_once():
    request = ModelRequest(system="You help.", tools=[], messages=[{"role": "user", "content": "hi"}])
    with FakeAnthropic() as api:
        api.answer_with(lambda body: ([text("Hello.")], None))

        def five_conversations():
            for _ in range(5):
                model = AnthropicModel("claude-test", api_key="sk-test-0123456789", base_url=api.url, max_retries=0)
                assert model.respond(request).text == "Hello."

        loads = _certificate_loads(five_conversations)

    assert loads <= 1  # one for the process (none when an earlier test built it already), not one per model


def test_the_shared_context_verifies_as_the_sdks_own_default_does():
    shared = ssl_context(anthropic.DefaultHttpxClient, False)
    own = _library().create_ssl_context(verify=True, trust_env=False)

    assert shared is ssl_context(anthropic.DefaultHttpxClient, False)
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.get_ca_certs(binary_form=True) == own.get_ca_certs(binary_form=True)


def test_with_formctl_trust_env_ssl_cert_file_names_the_trusted_bundle_as_the_sdk_reads_it(tmp_path, monkeypatch):
    known = ssl_context(anthropic.DefaultHttpxClient, False).get_ca_certs(binary_form=True)
    if not known:
        pytest.skip("no trusted certificates on this machine to make a bundle from")
    bundle = tmp_path / "one.pem"
    bundle.write_text(ssl.DER_cert_to_PEM_cert(known[0]))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))

    trusted = ssl_context(anthropic.DefaultHttpxClient, True)
    ignored = ssl_context(anthropic.DefaultHttpxClient, False)

    assert trusted.get_ca_certs(binary_form=True) == [known[0]]
    assert trusted.get_ca_certs(binary_form=True) == (
        _library().create_ssl_context(verify=True, trust_env=True).get_ca_certs(binary_form=True)
    )
    assert len(ignored.get_ca_certs(binary_form=True)) == len(known)  # FORMCTL_TRUST_ENV off: not read
