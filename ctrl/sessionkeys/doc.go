// Package sessionkeys gives every proxy of a data plane the same session
// keys, so that a client pinned to an endpoint by session persistence
// keeps it whichever proxy its next request reaches, and across restarts.
//
// The keys are files in a directory, as a mounted Secret holds them:
// `current` signs new tokens, and `previous`, when present, is still
// accepted. A rotation writes a new `current` and moves the old one to
// `previous`; once no token the old key signed can still be in use (the
// longest session lifetime of the routes that use sessions), `previous`
// goes. Each key is at least MinKeyLen bytes, used as they are.
//
// A Publisher stands between the controller and the config server: it
// adds the keys to every config published, and publishes the last
// config again when the files change, so a rotation reaches the proxies
// without waiting for a change in the cluster. Keys that cannot be read
// or are too short are logged and the last good ones kept.
//
// A dedicated data plane (configserver.PublishPlanes) gets keys of its
// own, derived from the directory's and the plane's name (PlaneKeys):
// its proxies share them, so its sessions hold across them, but a plane
// holds neither the directory's keys nor another plane's, so it cannot
// forge another data plane's session tokens. They follow a rotation of
// the directory's keys, in the same order.
package sessionkeys
