// Package secrets keeps credentials out of the artifacts folder that Prow
// publishes: it finds them (Scan, ScanTree), replaces them in place
// (Redact, RedactTree), writes files that must hold key material with mode
// 0600 (WritePrivate) and lists kept files that hold key material but can be
// read by others (FindExposed).
//
// Detection is lexical and line oriented, so that a tree of a few hundred
// megabytes of logs is read once, as a stream, with memory bounded by the
// longest line (1 MiB; longer lines are cut at a comma or space) plus, for a
// Kubernetes object whose kind is not yet known, its data section (4 MiB).
// It understands YAML in block style and pretty-printed JSON well enough to
// know which map a key belongs to, and single-line JSON well enough to find
// a key's string value; it does not parse either.
//
// # What is detected
//
// Each finding has a Kind:
//
//   - private-key: a PEM block whose label ends in PRIVATE KEY (RSA, EC,
//     OPENSSH, ENCRYPTED, PKCS #8 "PRIVATE KEY", ...; this covers kubeadm's
//     sa.key and the CA keys), whether on its own lines, indented in a YAML
//     block scalar, prefixed by a journal header on every line, or escaped on
//     one line inside a JSON string; also such a PEM block encoded in base64
//     (a value that starts with the encoding of "-----BEGIN" and decodes to
//     a private key label).
//   - bootstrap-token: a string of the form [a-z0-9]{6}.[a-z0-9]{16} that
//     holds at least one digit and one letter and stands on its own (not
//     next to a letter, digit, '.', '-' or '_'), anywhere; and any value of a
//     key or flag below that has that form.
//   - client-key-data: the value of a client-key-data key.
//   - kubeconfig-token: the value of a token key in a map under a user key
//     (users[].user.token).
//   - token: the value of any other token, id-token, access-token,
//     refresh-token (or _ spelling), bearerToken, bearer-token,
//     identitytoken, registrytoken or tlsBootstrapToken key (e.g. a
//     TokenRequest's status.token, a KubeadmConfig's
//     discovery.bootstrapToken.token).
//   - password: the value of a password, passwd, client-secret (clientSecret,
//     client_secret) or secretAccessKey (secret_access_key,
//     aws_secret_access_key) key; a --password flag; the password of a URL's
//     user information (scheme://user:password@host).
//   - certificate-key: the value of a certificateKey (certificate-key) key
//     and of kubeadm's --certificate-key flag.
//   - secret-data: every value under data or stringData of an object whose
//     kind is Secret, in YAML and in pretty-printed JSON whichever of kind
//     and data comes first (kubectl and sigs.k8s.io/yaml sort keys, so data
//     comes first), and in single-line JSON (e.g. the
//     last-applied-configuration annotation, escaped or not).
//   - token-flag: the value of --token, --discovery-token and
//     --tls-bootstrap-token on a command line (kubeadm join, its log lines,
//     JSON argument arrays), given as --flag value, --flag=value, or with
//     the value first on the next line (after a shell line continuation, or
//     in a pretty-printed JSON array).
//   - authorization: the credentials of an Authorization header with the
//     Bearer or Basic scheme.
//
// Keys are matched whole and without regard to case, as YAML keys at the
// start of a line (after indentation and "- ") or as quoted JSON keys
// anywhere on a line. A value is secret when it is a non-empty scalar: plain,
// single- or double-quoted, a number, or a block scalar (| or >) whose lines
// are then dropped; a value on the lines after an empty key counts when its
// first line is not itself a key, list item or flow collection.
//
// # What is deliberately not detected
//
// Certificates and public keys (BEGIN CERTIFICATE, PUBLIC KEY,
// client-certificate-data, certificate-authority-data, ca.crt outside a
// Secret), kubeadm's --discovery-token-ca-cert-hash sha256:... (a hash of the
// public CA), key names that merely contain "token" (tokenTTL,
// serviceAccountToken, automountServiceAccountToken,
// --discovery-token-unsafe-skip-ca-verification), empty values ("" or
// nothing), null, true and false, a key whose value is a map or a list
// (openAPIV3Schema properties describing a token field), placeholders
// (REDACTED, ${VAR}, $VAR, $(cmd), <value>, ***), file paths to keys
// (client-key, --token-file), the names of Secrets, and ConfigMap data.
//
// Not detected because they cannot be told from other text without
// context this package does not have: an arbitrary API key, password or
// JWT in free text (a log line saying "token abc"), logfmt pairs
// (token=abc) other than command-line flags, YAML flow maps ({token: abc}),
// a secret folded over several lines of a plain YAML scalar (only its first
// line), environment variables in inspect documents, and anything in binary
// or compressed files: a file with a NUL byte in its first 8000 bytes is
// skipped and listed as binary. A bootstrap token made of letters only is
// found only in a token key or flag.
//
// # Redaction
//
// A secret value is replaced by Marker (REDACTED); a number in JSON becomes
// the string "REDACTED"; a block scalar's header becomes REDACTED and its
// lines are dropped; a PEM block becomes the single line PEMMarker at the
// BEGIN line's position and indentation. So a YAML or JSON document stays
// valid, and REDACTED is also valid base64 where a Secret's data expects it.
// Everything else is left byte for byte, line endings included (but a PEM
// block that ends a file without a final newline leaves a marker line that
// has one); a file without findings is not rewritten. Redaction is idempotent, and nothing
// it leaves is found again.
//
// A Finding names the file and line and a Fingerprint of the secret (a hash
// prefix and a length), never the secret: reports are printed to public CI
// logs. The fingerprint lets one tell the same secret in two files apart from
// two different ones; for a short password it still allows a brute-force
// guess to be checked, so do not publish reports of production credentials.
//
// This package must not print, log or return a secret, must not follow a
// symbolic link (walks use os.Root and skip links and special files), and
// must not change a file's permission bits or any byte outside a secret.
package secrets
