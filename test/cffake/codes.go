package cffake

// Cloudflare error codes the fake answers with; doc.go says which were
// observed in real responses and which are chosen.
const (
	codeRateLimited     = 971
	codeInvalidRequest  = 1001
	codeTunnelNotFound  = 1003
	codeDNSValidation   = 1004
	codeTunnelNameTaken = 1013
	codeTunnelActive    = 1022
	codeTunnelConfig    = 1056
	codeRoute           = 7003
	codeMethod          = 7001
	codeDNSName         = 9000
	codeNotProxiable    = 9004
	codeIPv4            = 9005
	codeIPv6            = 9006
	codeCNAMEContent    = 9007
	codeRecordType      = 9020
	codeTTL             = 9021
	codeAuthMissing     = 9106
	codeBadBody         = 9207
	codeAuth            = 10000
	codeAccessInvalid   = 12130
	codeAccessNotFound  = 12131
	codeAccessConflict  = 12132
	codeAccessInUse     = 12133
	codeLBInvalid       = 1101
	codeLBNotFound      = 1102
	codeLBConflict      = 1103
	codeLBInUse         = 1104
	codeLBQuota         = 1105
	codeLBNotEntitled   = 1106
	codeServerError     = 10013
	codeRecordNotFound  = 81044
	codeCNAMEConflict   = 81053
	codeCNAMEExists     = 81054
	codeIdentical       = 81058
)
