#!/usr/bin/env python3
"""HTTP/2 stand-ins for APNs and FCM, for the delivery tests and `stepo-bench deliver`: one HTTP/2
server over TLS on 127.0.0.1 (a self-signed certificate, FOLDER/cert.pem, which the client is
told to trust) that checks each request as Apple's and Google's references define it and
answers with their documented errors. TLS, as the providers speak it: libcurl 7.88's clear-text
HTTP/2 (prior knowledge) cannot reuse a connection.

HTTP/2 itself is Granian's (PyPI; a Rust server for Python applications, RSGI interface): the
framing, HPACK and TLS run in Rust, so one connection carries thousands of requests a second
on one core and the stand-in does not hide the client's own speed; the checks are this
file's, in Python, with the `cryptography` package verifying every signature.

    standins.py --dir FOLDER [--port 0]
    standins.py --dir FOLDER --port PORT --keys-only

--keys-only writes the keys and the certificate for a server on PORT and exits: the push
bench's own stand-in (`stepo-bench standins`, nghttp2 and the same checks in Swift) serves
with them.

Writes FOLDER/apns.p8 (an EC P-256 key in PKCS#8, as Apple issues) and FOLDER/service.json (a
service-account key, as Google issues, pointing its token_uri here), verifies every signature
with their public halves, logs every request as one JSON line to FOLDER/requests.jsonl, and
prints "listening on https://127.0.0.1:PORT" once it is ready.

Answers, by device token prefix:
  gone-    APNs 410 Unregistered (with a timestamp); FCM 404 UNREGISTERED
  bad-     APNs 400 BadDeviceToken; FCM 400 INVALID_ARGUMENT
  busy-    429 the first time each token is seen (APNs TooManyRequests with Retry-After: 1;
           FCM QUOTA_EXCEEDED), 200 after
  down-    500 the first time, 200 after
  anything else: 200 (APNs with an apns-id header; FCM with the message name)
Each request's log line names the connection it came on ("connection": 1, 2, …), so a test can
count the connections a client opened. A provider token that verified once is not verified
again (APNs, too, validates a token once and caches it).
A request that breaks the rules (a bad JWT, a missing header, a payload over 4096 bytes) is
answered 403 InvalidProviderToken / 400 with the reason, and logged with "violation".
"""
import argparse
import base64
import datetime
import ipaddress
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography import x509
from cryptography.x509.oid import NameOID

TEAM, KEY_ID, PROJECT, TOPIC = "TEAM123456", "KEY1234567", "stepo-test", "app.stepo.ios"
ACCESS_TOKEN = "stand-in-access-token"
lock = threading.Lock()
seen = set()
verified = {}  # bearer -> (header, claims): each distinct provider token is checked once


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_jwt(token, public_key, algorithm):
    header_b64, claims_b64, signature_b64 = token.split(".")
    header, claims = json.loads(b64url_decode(header_b64)), json.loads(b64url_decode(claims_b64))
    signed = f"{header_b64}.{claims_b64}".encode()
    signature = b64url_decode(signature_b64)
    if header.get("alg") != algorithm:
        raise ValueError(f"alg is {header.get('alg')}, not {algorithm}")
    if algorithm == "ES256":
        if len(signature) != 64:
            raise ValueError("an ES256 signature is 64 bytes r || s")
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        public_key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
    else:
        public_key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    return header, claims


def first_time(token):
    with lock:
        if token in seen:
            return False
        seen.add(token)
        return True


class StandIns:
    """The checks and answers. `create` makes the keys and the certificate (the main process);
    `load` reads them back (the Granian worker that serves the requests)."""

    def __init__(self, folder, apns_key, fcm_key):
        self.folder = folder
        self.apns_key = apns_key
        self.fcm_key = fcm_key
        self.apns_public = apns_key.public_key()
        self.fcm_public = fcm_key.public_key()
        self.connections = {}

    @classmethod
    def create(cls, folder, port):
        apns_key = ec.generate_private_key(ec.SECP256R1())
        with open(os.path.join(folder, "apns.p8"), "wb") as f:
            f.write(apns_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        fcm_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = fcm_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        with open(os.path.join(folder, "service.json"), "w") as f:
            json.dump({"type": "service_account", "project_id": PROJECT, "private_key_id": "k1", "private_key": pem,
                       "client_email": "stepo@stepo-test.iam.gserviceaccount.com",
                       "token_uri": f"https://127.0.0.1:{port}/token"}, f)
        write_certificate(folder)
        return cls(folder, apns_key, fcm_key)

    @classmethod
    def load(cls, folder):
        with open(os.path.join(folder, "apns.p8"), "rb") as f:
            apns_key = serialization.load_pem_private_key(f.read(), password=None)
        with open(os.path.join(folder, "service.json")) as f:
            fcm_key = serialization.load_pem_private_key(json.load(f)["private_key"].encode(), password=None)
        return cls(folder, apns_key, fcm_key)

    def answer(self, method, path, headers, body, connection):
        """(status, headers, body, record) for one request."""
        number = self.connections.setdefault(connection, len(self.connections) + 1)
        record = {"method": method, "path": path, "headers": headers, "bytes": len(body), "at": time.time(),
                  "connection": number}
        try:
            if path.startswith("/3/device/"):
                return self.apns(path[len("/3/device/"):], headers, body, record)
            if path == "/token":
                return self.oauth(body, record)
            if path == f"/v1/projects/{PROJECT}/messages:send":
                return self.fcm(headers, body, record)
            return 404, {}, b"{}", record
        except Exception as error:  # a rule broken: say which
            record["violation"] = str(error)
            return 400, {}, json.dumps({"reason": str(error)}).encode(), record

    def apns(self, token, headers, body, record):
        for name in ("apns-topic", "apns-push-type", "apns-priority", "authorization"):
            if name not in headers:
                raise ValueError(f"missing header {name}")
        if headers["apns-topic"] != TOPIC:
            raise ValueError("apns-topic")
        if headers["apns-priority"] not in ("5", "10"):
            raise ValueError("apns-priority must be 5 or 10")
        if len(headers.get("apns-collapse-id", "")) > 64:
            raise ValueError("apns-collapse-id over 64 bytes")
        if len(body) > 4096:
            record["violation"] = "PayloadTooLarge"
            return 413, {}, b'{"reason":"PayloadTooLarge"}', record
        payload = json.loads(body)
        if "aps" not in payload:
            raise ValueError("no aps dictionary")
        bearer = headers["authorization"]
        # Whatever is wrong with the provider token (no "bearer ", not a JWT, not JSON, a bad
        # signature or claims), APNs answers 403, which the worker meets with a new token.
        try:
            if not bearer.startswith("bearer "):
                raise ValueError("no bearer token")
            if bearer not in verified:
                verified[bearer] = check_jwt(bearer.removeprefix("bearer "), self.apns_public, "ES256")
            header, claims = verified[bearer]
            if not isinstance(header, dict) or not isinstance(claims, dict):
                raise ValueError("not a JWT")
            iat = claims.get("iat")
            if header.get("kid") != KEY_ID or claims.get("iss") != TEAM or not isinstance(iat, (int, float)) \
                    or isinstance(iat, bool) or abs(time.time() - iat) > 3600:
                raise ValueError("kid, iss or iat")
            record["iat"] = claims["iat"]
        except Exception as error:
            record["violation"] = f"InvalidProviderToken: {error}"
            return 403, {}, b'{"reason":"InvalidProviderToken"}', record
        record["token"], record["payload"] = token, payload
        if token.startswith("gone-"):
            return 410, {}, json.dumps({"reason": "Unregistered", "timestamp": int(time.time() * 1000)}).encode(), record
        if token.startswith("bad-"):
            return 400, {}, b'{"reason":"BadDeviceToken"}', record
        if token.startswith("busy-") and first_time(token):
            return 429, {"retry-after": "1"}, b'{"reason":"TooManyRequests"}', record
        if token.startswith("down-") and first_time(token):
            return 500, {}, b'{"reason":"InternalServerError"}', record
        return 200, {"apns-id": f"apns-{len(seen)}-{time.time_ns()}"}, b"", record

    def oauth(self, body, record):
        form = urllib.parse.parse_qs(body.decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            raise ValueError("grant_type")
        _, claims = check_jwt(form["assertion"][0], self.fcm_public, "RS256")
        if claims.get("scope") != "https://www.googleapis.com/auth/firebase.messaging" or not claims.get("aud", "").endswith("/token"):
            raise ValueError("scope or aud")
        record["grant"] = claims
        return 200, {"content-type": "application/json"}, json.dumps(
            {"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"}).encode(), record

    def fcm(self, headers, body, record):
        if headers.get("authorization") != f"Bearer {ACCESS_TOKEN}":
            record["violation"] = "UNAUTHENTICATED"
            return 401, {}, b'{"error":{"status":"UNAUTHENTICATED"}}', record
        message = json.loads(body)["message"]
        token = message["token"]
        record["token"], record["payload"] = token, message
        def error(status, name, code):
            return status, {}, json.dumps({"error": {"code": status, "status": name, "details": [
                {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]}}).encode(), record
        if token.startswith("gone-"):
            return error(404, "NOT_FOUND", "UNREGISTERED")
        if token.startswith("bad-"):
            return error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
        if token.startswith("busy-") and first_time(token):
            return error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
        if token.startswith("down-") and first_time(token):
            return error(500, "INTERNAL", "INTERNAL")
        return 200, {}, json.dumps({"name": f"projects/{PROJECT}/messages/{time.time_ns()}"}).encode(), record



def write_certificate(folder):
    """A self-signed certificate for 127.0.0.1: cert.pem (also the CA to trust), cert.key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    with open(os.path.join(folder, "cert.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(folder, "cert.key"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


class App:
    """The RSGI application Granian's worker runs: each request checked, answered and logged."""

    def __rsgi_init__(self, loop):
        folder = os.environ["STANDINS_DIR"]
        self.standins = StandIns.load(folder)
        self.log = open(os.path.join(folder, "requests.jsonl"), "a", buffering=1)
        # Gone with the process that started it, however that one ends (kill -9 included).
        parent = os.getppid()
        def watch():
            while os.getppid() == parent:
                time.sleep(0.2)
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
        print(f"listening on https://127.0.0.1:{os.environ['STANDINS_PORT']}", flush=True)

    def __rsgi_del__(self, loop):
        pass

    async def __rsgi__(self, scope, protocol):
        if scope.proto != "http":
            return
        body = await protocol()
        headers = dict(scope.headers.items())
        status, extra, answer, record = self.standins.answer(scope.method, scope.path, headers, body, scope.client)
        record["status"] = status
        self.log.write(json.dumps(record) + "\n")
        protocol.response_bytes(status, list(extra.items()), answer)

    async def __call__(self, scope, protocol):
        await self.__rsgi__(scope, protocol)


app = App()


def main():
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces

    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--keys-only", action="store_true")
    options = parser.parse_args()
    folder = os.path.abspath(options.dir)
    port = options.port
    if port == 0:  # a free port, found by binding one
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
    StandIns.create(folder, port)
    if options.keys_only:
        return
    os.environ["STANDINS_DIR"], os.environ["STANDINS_PORT"] = folder, str(port)
    Granian("standins:app", interface=Interfaces.RSGI, http=HTTPModes.http2, address="127.0.0.1", port=port, workers=1,
            ssl_cert=Path(folder, "cert.pem"), ssl_key=Path(folder, "cert.key"), websockets=False, log_enabled=False,
            working_dir=Path(__file__).resolve().parent).serve()


if __name__ == "__main__":
    main()
