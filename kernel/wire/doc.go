// Package wire is the Jupyter messaging protocol (version 5.3) without the
// sockets: the connection file, the multipart message format
//
//	[identities..., "<IDS|MSG>", signature, header, parent_header, metadata, content, buffers...]
//
// and HMAC-SHA256 signing. The signature is the hex HMAC of the four JSON
// frames header, parent_header, metadata and content, concatenated; an
// empty key disables signing (the signature frame is then empty).
// Incoming signatures are compared in constant time; a message whose
// signature does not verify is rejected with ErrBadSignature and must never
// be acted upon.
package wire
