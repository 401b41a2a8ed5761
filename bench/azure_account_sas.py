#!/usr/bin/env python3
# An Azure account SAS URL for bench/objects_race_azblob.sh: rclone 1.60's azureblob
# backend takes an account and key only for https://ACCOUNT.SUFFIX, so it reaches a
# stack's path-style http endpoint by a SAS URL. Usage: azure_account_sas.py
# CONNECTION-STRING-FILE ENDPOINT (printed on stdout: give it to rclone in its environment).
import base64, hashlib, hmac, sys, urllib.parse
# An account SAS (Blob service; every resource type and permission; http and https)
# signed with the stack's account key, read from its connection string.
conn, endpoint = sys.argv[1], sys.argv[2]
f = dict(p.split("=", 1) for p in open(conn).read().strip().split(";") if "=" in p)
account, key = f["AccountName"], f["AccountKey"]
sv, sp, ss, srt, se, spr = "2019-12-12", "rwdlacup", "b", "sco", "2099-01-01T00:00:00Z", "https,http"
to_sign = "\n".join([account, sp, ss, srt, "", se, "", spr, sv, ""])
sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
q = urllib.parse.urlencode({"sv": sv, "ss": ss, "srt": srt, "sp": sp, "se": se, "spr": spr, "sig": sig})
print(f"{endpoint}?{q}")
