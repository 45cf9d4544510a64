"""A passkey made and used through the local stack (`make run`) as a browser at the README's
address makes one: the origin is http://127.0.0.1:8080 and the relying party 127.0.0.1, so the
stack must name the gateway as its public address (auth's own port made every passkey
`invalid_passkey`). The authenticator is written here from the WebAuthn specification alone
(attestation "none", an ES256 key), with cbor2 and cryptography from PyPI: nothing of Pier's.

The account's address is proven first with the link auth mails (a file under the stack's data
folder while no SMTP server is set), which must point at the gateway too.

    python3 passkey_local.py BASE_URL MAIL_FOLDER
"""
import base64
import email
import email.policy
import glob
import hashlib
import json
import os
import re
import struct
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

base, maildir = sys.argv[1], sys.argv[2]
origin = base.rstrip("/")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def api(method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def expect(condition, what):
    if not condition:
        print("passkey-local: FAILED:", what, file=sys.stderr)
        sys.exit(1)


# An account, its address proven by the mailed link (which names the gateway's address).
address = "passkey-%s@example.com" % uuid.uuid4().hex[:8]
status, session = api("POST", "/auth/register", {"email": address, "password": "a long enough passphrase"})
expect(status == 201, "register: %s %s" % (status, session))
link = None
for _ in range(100):
    for path in glob.glob(os.path.join(maildir, "**", "*.eml"), recursive=True):
        with open(path, "rb") as file:
            message = email.message_from_binary_file(file, policy=email.policy.default)
        if address not in str(message["To"]):
            continue
        found = re.search(r"(https?://[^\s\"<>]+/auth/email/verify\?token=[A-Za-z0-9_\-]+)", message.get_body(("plain",)).get_content())
        if found:
            link = found.group(1)
    if link:
        break
    time.sleep(0.1)
expect(link is not None, "no verification mail for %s in %s" % (address, maildir))
expect(link.startswith(origin + "/"), "the mailed link names %s, not the gateway %s" % (link, origin))
token = urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["token"][0]
status, _ = api("POST", "/auth/email/verify", {"token": token})
expect(status in (200, 204), "verify: %s" % status)
status, session = api("POST", "/auth/login", {"email": address, "password": "a long enough passphrase"})
expect(status == 200, "login: %s %s" % (status, session))
access = session["accessToken"]

# Registration, as a browser at the README's address makes it.
status, options = api("POST", "/auth/passkeys/register/options", token=access)
expect(status == 200, "register options: %s %s" % (status, options))
rp_id = options["rp"]["id"]
expect(rp_id == urllib.parse.urlparse(origin).hostname, "the relying party is %s, not the gateway's host" % rp_id)
key = ec.generate_private_key(ec.SECP256R1())
numbers = key.public_key().public_numbers()
cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
credential = os.urandom(16)
rp_hash = hashlib.sha256(rp_id.encode()).digest()
# Flags: user present (0x01), user verified (0x04), attested credential data (0x40).
auth_data = rp_hash + bytes([0x45]) + struct.pack(">I", 0) + bytes(16) + struct.pack(">H", len(credential)) + credential + cbor2.dumps(cose)
client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": origin, "crossOrigin": False}).encode()
attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
status, added = api("POST", "/auth/passkeys/register", {
    "id": b64url(credential), "rawId": b64url(credential), "type": "public-key", "name": "local stack",
    "response": {"clientDataJSON": b64url(client_data), "attestationObject": b64url(attestation)},
}, token=access)
expect(status == 201, "the passkey made at %s was refused: %s %s" % (origin, status, added))

# Sign-in with it, usernameless.
status, request = api("POST", "/auth/passkeys/login/options", {})
expect(status == 200, "login options: %s %s" % (status, request))
assertion_data = rp_hash + bytes([0x05]) + struct.pack(">I", 1)
client_data = json.dumps({"type": "webauthn.get", "challenge": request["challenge"], "origin": origin, "crossOrigin": False}).encode()
signature = key.sign(assertion_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
user_handle = unb64url(options["user"]["id"])
status, signed = api("POST", "/auth/passkeys/login", {
    "id": b64url(credential), "rawId": b64url(credential), "type": "public-key",
    "response": {"clientDataJSON": b64url(client_data), "authenticatorData": b64url(assertion_data),
                 "signature": b64url(signature), "userHandle": b64url(user_handle)},
})
expect(status == 200 and signed["user"]["email"] == address, "passkey sign-in: %s %s" % (status, signed))
print("passkey-local: a passkey made at %s (relying party %s) registered and signed in; the mailed link names %s" % (origin, rp_id, origin))
