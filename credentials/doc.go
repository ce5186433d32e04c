// Package credentials reads the SASL credentials of the Kafka listeners
// from their own file, in which no password is written: SCRAM-SHA-256/512
// as the salted keys Kafka's kafka-configs stores (salt, iterations,
// StoredKey, ServerKey), PLAIN as a PBKDF2-SHA256 hash in PHC string
// format. [Store] holds a file's credentials in force, re-reads it when its
// content changes (a Kubernetes Secret mount swaps a symlink, so the
// content is compared, not the modification time) and keeps the old ones
// when the new file is refused. [MakeEntry] and [Add] make the entries
// (`gateway credentials add`).
//
// credentials imports kafkaproto only (the CredentialStore it implements
// and the SCRAM derivation); kafkaproto does not know files.
package credentials
