package catalog

import "os"

// KeyFileEnv names the file that holds the Median key, for a key kept in a
// mounted secret: the core reads it again every 2 s, so a new key takes
// effect without a restart (docs/SECURITY.md, "Keys that change").
const KeyFileEnv = "MEDIAN_KEY_FILE"

// PreviousKeyFileEnv names the file that holds the key being retired,
// beside KeyFileEnv; a missing or empty file means none.
const PreviousKeyFileEnv = "MEDIAN_KEY_PREVIOUS_FILE"

// keyFilesSet reports whether the environment names key files; the core
// then reads them itself and MEDIAN_KEY is ignored.
func keyFilesSet() bool {
	return os.Getenv(KeyFileEnv) != "" || os.Getenv(PreviousKeyFileEnv) != ""
}
