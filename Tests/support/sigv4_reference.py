#!/usr/bin/env python3
"""Reference SigV4 signatures for SegnoS3's tests, computed by botocore's S3 signer.

Reads a JSON list of cases on stdin; writes a JSON list of results on stdout, in the same order.
A case: {"access_key", "secret_key", "session_token"?, "region", "method", "scheme", "host",
         "raw_path" (unencoded, e.g. "/bucket/a//b/./c"), "query": [[name, value-or-null], ...],
         "headers": {name: value}, "body" (text, UTF-8) | "unsigned": true, "amz_date": "YYYYMMDDTHHMMSSZ"}
A result: {"canonical_request", "string_to_sign", "signed_headers", "signature", "authorization"}.

The path is percent-encoded here with Python's urllib (everything but unreserved characters and
"/"), independently of the Swift code; botocore's S3 signer then signs it without normalising.
"""
import json
import sys
from urllib.parse import quote

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials


def sign(case):
    path = quote(case["raw_path"], safe="/~")
    url = f'{case["scheme"]}://{case["host"]}{path}'
    params = [(name, "" if value is None else value) for name, value in case.get("query", [])]
    body = None if case.get("unsigned") else case.get("body", "").encode("utf-8")
    request = AWSRequest(method=case["method"], url=url, headers=dict(case.get("headers", {})),
                         data=body, params=params)
    if case.get("unsigned"):
        request.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    credentials = Credentials(case["access_key"], case["secret_key"], case.get("session_token"))
    auth = S3SigV4Auth(credentials, "s3", case["region"])
    # The steps of add_auth, with a fixed timestamp and the intermediate texts kept.
    request.context["timestamp"] = case["amz_date"]
    auth._modify_request_before_signing(request)
    canonical = auth.canonical_request(request)
    to_sign = auth.string_to_sign(request, canonical)
    signature = auth.signature(to_sign, request)
    auth._inject_signature_to_request(request, signature)
    return {
        "canonical_request": canonical,
        "string_to_sign": to_sign,
        "signed_headers": auth.signed_headers(auth.headers_to_sign(request)).replace("authorization;", ""),
        "signature": signature,
        "authorization": request.headers["Authorization"],
    }


def main():
    cases = json.load(sys.stdin)
    json.dump([sign(case) for case in cases], sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
