"""A TOTP code (RFC 6238: HMAC-SHA-1, 30-second steps, six digits) for a Base32 secret, written
from the RFC alone: what an authenticator app computes, to check Pier's codes against.

Usage: python3 totp.py SECRET [STEP_OFFSET]
"""
import base64
import hashlib
import hmac
import struct
import sys
import time

secret = sys.argv[1].upper()
key = base64.b32decode(secret + "=" * (-len(secret) % 8))
counter = int(time.time()) // 30 + (int(sys.argv[2]) if len(sys.argv) > 2 else 0)
digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
offset = digest[-1] & 0x0F
print("%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1000000))
