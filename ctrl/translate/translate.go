package translate

// Translate turns a snapshot into proxy config, statuses, hostnames and
// events. It is pure: same input, same output.
func Translate(in *Input) *Output {
	return &Output{}
}
