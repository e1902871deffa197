"""Word lists and provider formats for the secret guard (M11), kept apart from its rules."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


PLACEHOLDER_WORDS = _words(
    """
    password passwort kennwort pass pwd pw secret token key apikey api_key credentials
    changeme change_me redacted placeholder dummy sample example none null nil true false
    undefined str string bytes int bool text varchar secretstr optional required todo tbd
    fixme empty unset bearer basic env value your_password yourpassword mypassword hidden
    masked omitted removed xxx user username same-origin include omit guest
    """
)

PROVIDER_PATTERNS = [
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{40,}",
    r"gl(?:pat|dt|rt|ptt|ft|soat|oas|cbt|imt|agent)-[A-Za-z0-9_-]{20,}",
    r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin|sid)\d\d-|or-v1-)?[A-Za-z0-9_-]{20,}",
    r"xox[abposre]-[A-Za-z0-9-]{10,}",
    r"xapp-\d-[A-Za-z0-9-]{10,}",
    r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
    r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",
    r"whsec_[A-Za-z0-9+/=]{24,}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"GOCSPX-[A-Za-z0-9_-]{24,}",
    r"ya29\.[0-9A-Za-z_-]{30,}",
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    r"hf_[A-Za-z0-9]{30,}",
    r"npm_[A-Za-z0-9]{36}",
    r"pypi-AgE[A-Za-z0-9_-]{50,}",
    r"SK[0-9a-f]{32}",
    r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    r"key-[0-9a-f]{32}",
    r"[0-9a-f]{32}-us\d{1,2}",
    r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}",
    r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{30,}",
    r"\d{8,10}:AA[0-9A-Za-z_-]{30,}",
    r"[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}",
    r"do[por]_v1_[0-9a-f]{64}",
    r"dp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_.-]{40,}",
    r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}",
    r"secret_[A-Za-z0-9]{43}",
    r"ntn_[A-Za-z0-9]{40,}",
    r"ATATT3[A-Za-z0-9_=-]{100,}",
    r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}",
    r"dapi[0-9a-f]{32}",
    r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}",
    r"EAAA[A-Za-z0-9_-]{60,}",
    r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}",
    r"nfp_[A-Za-z0-9]{36}",
    r"fo1_[A-Za-z0-9_-]{40,}",
    r"sbp_[0-9a-f]{40}",
    r"sntr(?:ys|yu)_[A-Za-z0-9_=+/-]{40,}",
    r"glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}",
    r"glc_[A-Za-z0-9+/_=-]{32,}",
    r"NRAK-[A-Z0-9]{27}",
    r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
    r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"gsk_[A-Za-z0-9]{48,}",
    r"r8_[A-Za-z0-9]{37}",
    r"pplx-[A-Za-z0-9]{40,}",
    r"xai-[A-Za-z0-9]{60,}",
    r"dckr_pat_[A-Za-z0-9_-]{27,}",
    r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
    r"pul-[0-9a-f]{40}",
    r"figd_[A-Za-z0-9_-]{40,}",
    r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}",
    r"CFPAT-[A-Za-z0-9_-]{43}",
    r"sl\.[A-Za-z0-9_-]{120,}",
    r"sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
    r"tfp_[A-Za-z0-9_-]{40,}",
    r"shippo_(?:live|test)_[0-9a-f]{40}",
    r"aio_[A-Za-z0-9]{28}",
    r"LTAI[A-Za-z0-9]{12,20}",
    r"hv[sb]\.[A-Za-z0-9_-]{24,}",
    r"AccountKey=[A-Za-z0-9+/]{80,}={0,2}",
    r"rnd_[A-Za-z0-9]{32}",
    r"op_[a-z0-9]{26}",
    r"ops_eyJ[A-Za-z0-9_-]{100,}",
]

SECRET_WORDS = _words(
    """
    password passwd passwort kennwort pass pwd pw passphrase passcode secret secrets token
    apikey credential credentials creds pin zugangsdaten authtoken accesstoken secretkey
    privatekey clientsecret geheimzahl pat psk geheimnis zugangscode pincode geheimcode
    netzwerkschlüssel sicherheitsschlüssel zugangsschlüssel wlanschlüssel
    wlanpasswort wlankennwort
    """
)

SECRET_SUFFIXES = (
    "password",
    "passwd",
    "passwort",
    "kennwort",
    "secret",
    "token",
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "authkey",
    "masterkey",
    "pass",
    "pwd",
)

KEY_QUALIFIERS = _words(
    """
    api access private secret auth master encryption signing account app session service
    deploy webhook storage subscription license admin client crypto hmac jwt cookie
    zugangs privat geheim shared consumer x wlan wifi wpa wpa2 network netzwerk
    """
)

KEY_WORDS = frozenset({"key", "schlüssel"})

# "code" names a secret only after one of these: "door code", "Zugangscode" (not "zip code").
CODE_QUALIFIERS = _words(
    """
    door access alarm gate garage safe entry security unlock lock pin tür tresor zugangs
    haustür garagen
    """
)

NOT_SECRET_WORDS = _words(
    """
    length len min max hash hashed hashes policy policies reset expiry expires expiration
    expired type types url uri urls endpoint file files path name names id ids count limit
    field fields label prompt hint header headers regex pattern validator validators required
    enabled enable disable disabled rotation ttl timeout lifetime usage budget tokens prefix
    env var vars placeholder input strength format store manager change changed generator
    check verify error errors message msg help mode method kind title text description chars
    characters size version issuer audience algorithm alg scope scopes provider source ref
    arn location dir folder param parameter column attr attribute class widget form template
    display show visible hidden mask masked protected less stdin richtlinie vergessen
    regel hint hints reminder sent forgot forgotten rules rule lengths confirm confirmation
    id_token_hint stdin_file option options flag flags entry entries
    """
)

WEAK_NAMES = frozenset({"auth", "key", "keys", "schl\u00fcssel"})

PASS_LOOKALIKES = frozenset({"bypass", "compass", "surpass", "overpass", "underpass", "trespass"})

STOPWORDS = _words(
    """
    a an the in on at to for from of with by via into not no never still now also only just
    too very so as same different wrong incorrect invalid valid correct right required
    needed mandatory optional missing empty blank weak strong secure insecure safe unsafe
    long short new old unknown known case-sensitive sensitive fine ok okay good bad ready
    here there below above your my our their his her its this that these those what which
    how where when why who one two three four five six seven eight nine ten twelve set reset
    stored saved kept changed hidden shown sent gone out off up down over back available
    active inactive disabled enabled expired revoked rotated null none nil unset undefined
    generated random unique identical listed encrypted hashed attached included provided
    given shared written printed logged leaked compromised exposed protected visible
    displayed shorter longer stronger weaker easy hard simple complicated complex obvious
    something anything nothing everything whatever usually always probably definitely maybe
    perhaps being been be getting going about like either both all any some each every more
    less much many most least enough mine yours ours theirs hers already fake then
    than if and or but because since until while during after before again almost
    ist der die das ein eine einen einem im in auf bei zu zum zur nicht kein keine noch
    schon jetzt nun falsch richtig korrekt ungültig gültig abgelaufen erforderlich
    notwendig nötig leer sicher unsicher schwach stark lang kurz dasselbe derselbe dieselbe
    gleich identisch veraltet gesperrt verschlüsselt vergeben bekannt unbekannt vergessen
    geändert gespeichert hinterlegt zurückgesetzt mindestens höchstens nur auch sehr mein
    dein sein ihr unser euer deren dessen hier dort oben unten gelüftet per alle etwa immer
    wie was wo wer bitte erfolgreich neu alt geheim vorhanden weg aus an und oder aber
    wurde wird war sind muss soll kann siehe see ask frag check leider eigentlich wohl
    vielleicht ganz gar total wirklich ziemlich echt case pretty super quite rather
    import else elif return def class lambda yield await async pass
    """
)

# Words and marks without which no assignment, command or prose rule can match: a line
# with none of them (most of a memory file) skips those rules.
CUES = (
    "pass",
    "pw",
    "pin",
    "secret",
    "token",
    "key",
    "schl\u00fcssel",
    "cred",
    "kennwort",
    "zugang",
    "auth",
    "bearer",
    "identified",
    "geheim",
    "login",
    "log in",
    "sign in",
    "anmeld",
    "access",
    "account",
    "konto",
    "psk",
    "code",
    "env",
    "echo",
    "${",
)
