package config

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// DefaultsTOML is the embedded default configuration; the repository-root
// config.toml is byte-identical to it.
//
//go:embed defaults.toml
var DefaultsTOML string

// ConfigPathEnv names the environment variable holding the TOML file path.
const ConfigPathEnv = "IGGY_CONFIG_PATH"

// configFileBytesMax bounds the configuration file we are willing to read.
const configFileBytesMax = 4 << 20

// Env is a snapshot of environment variables, name → value.
type Env map[string]string

// EnvFromList builds an Env from "NAME=value" entries such as os.Environ().
func EnvFromList(entries []string) Env {
	env := make(Env, len(entries))
	for _, entry := range entries {
		name, value, ok := strings.Cut(entry, "=")
		if ok {
			env[name] = value
		}
	}
	return env
}

// Warning is a non-fatal configuration finding, e.g. an unknown IGGY_* var.
type Warning struct {
	Variable string
	Message  string
}

func (w Warning) String() string {
	if w.Variable == "" {
		return w.Message
	}
	return w.Variable + ": " + w.Message
}

// Defaults returns the embedded default configuration.
func Defaults() (*Config, error) {
	cfg := &Config{}
	if err := decodeTOML(DefaultsTOML, "embedded defaults", cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Load builds the configuration: embedded defaults, then the TOML file named
// by IGGY_CONFIG_PATH (when set; a missing file is an error), then IGGY_*
// variables from env. It does not validate: call (*Config).Validate.
func Load(env Env) (*Config, []Warning, error) {
	cfg, err := Defaults()
	if err != nil {
		return nil, nil, err
	}
	if path := env[ConfigPathEnv]; path != "" {
		if err := mergeFile(cfg, path); err != nil {
			return nil, nil, err
		}
	}
	warnings, err := applyEnv(cfg, env)
	if err != nil {
		return nil, nil, err
	}
	return cfg, warnings, nil
}

// LoadFile is Load with an explicit file path and env (path "" = none).
func LoadFile(path string, env Env) (*Config, []Warning, error) {
	merged := make(Env, len(env)+1)
	for name, value := range env {
		merged[name] = value
	}
	merged[ConfigPathEnv] = path
	return Load(merged)
}

func mergeFile(cfg *Config, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("config file %s (from %s): %w", path, ConfigPathEnv, err)
	}
	if info.IsDir() {
		return fmt.Errorf("config file %s (from %s) is a directory", path, ConfigPathEnv)
	}
	if info.Size() > configFileBytesMax {
		return fmt.Errorf("config file %s is %d bytes; the limit is %d", path, info.Size(), configFileBytesMax)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return decodeTOML(string(text), "config file "+path, cfg)
}

// decodeTOML decodes text onto cfg (keys absent from text keep their value;
// arrays present in text replace the whole array) and refuses unknown and
// removed keys.
func decodeTOML(text, source string, cfg *Config) error {
	// First pass onto a scratch value learns which keys the text defines, so
	// arrays it sets can be cleared: the decoder would otherwise merge array
	// elements into the existing ones instead of replacing the array.
	probe, err := toml.Decode(text, &Config{})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	clearDefinedArrays(reflect.ValueOf(cfg).Elem(), probe, nil)
	meta, err := toml.Decode(text, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	var problems []error
	seen := map[string]bool{}
	for _, key := range meta.Undecoded() {
		path := key.String()
		if removed, ok := removedKeyFor(path); ok {
			if !seen[removed.Path] {
				seen[removed.Path] = true
				problems = append(problems, fmt.Errorf("%s: %s", source, removed.message()))
			}
			continue
		}
		if parentReported(seen, key) {
			continue
		}
		seen[path] = true
		problems = append(problems, fmt.Errorf("%s: unknown key %q", source, path))
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Error() < problems[j].Error() })
	return errors.Join(problems...)
}

// clearDefinedArrays zeroes every slice field whose key the TOML defines.
func clearDefinedArrays(target reflect.Value, meta toml.MetaData, path []string) {
	for i := range target.NumField() {
		field := target.Type().Field(i)
		key, _, _ := strings.Cut(field.Tag.Get("toml"), ",")
		if key == "" || key == "-" {
			continue
		}
		fieldPath := append(append([]string(nil), path...), key)
		switch field.Type.Kind() {
		case reflect.Slice:
			if meta.IsDefined(fieldPath...) {
				target.Field(i).SetZero()
			}
		case reflect.Struct:
			if meta.IsDefined(fieldPath...) {
				clearDefinedArrays(target.Field(i), meta, fieldPath)
			}
		}
	}
}

// parentReported suppresses "unknown key a.b.c" once "a.b" was reported.
func parentReported(seen map[string]bool, key toml.Key) bool {
	for i := 1; i < len(key); i++ {
		if seen[key[:i].String()] {
			return true
		}
	}
	return false
}

// RemovedKey is a key upstream moved to a per-topic option or dropped.
// Setting one (file or env) refuses boot so the value is not silently lost.
type RemovedKey struct {
	Path        string
	Replacement string
}

func (r RemovedKey) message() string {
	if r.Replacement == "" {
		return fmt.Sprintf("key %q was removed and is no longer supported; delete it", r.Path)
	}
	return fmt.Sprintf("key %q was removed: it is now the per-topic option %q set when a topic is created; delete it", r.Path, r.Replacement)
}

// RemovedKeys lists upstream's relocated and removed keys.
var RemovedKeys = []RemovedKey{
	{"system.topic.max_size", "max_topic_size"},
	{"system.topic.message_expiry", "message_expiry"},
	{"system.partition.enforce_fsync", "enforce_fsync"},
	{"system.partition.messages_required_to_save", "messages_required_to_save"},
	{"system.partition.size_of_messages_required_to_save", "size_of_messages_required_to_save"},
	{"system.segment.size", "segment_size"},
	{"system.segment.preallocate", "preallocate_segments"},
	{"system.message_deduplication", ""},
	{"extra", ""},
}

func removedKeyFor(path string) (RemovedKey, bool) {
	for _, removed := range RemovedKeys {
		if path == removed.Path || strings.HasPrefix(path, removed.Path+".") {
			return removed, true
		}
	}
	return RemovedKey{}, false
}

// removedKeyForEnv matches IGGY_<PATH> (and IGGY_<PATH>_... for tables).
func removedKeyForEnv(name string) (RemovedKey, bool) {
	for _, removed := range RemovedKeys {
		envName := envPrefix + strings.ToUpper(strings.ReplaceAll(removed.Path, ".", "_"))
		if name == envName || strings.HasPrefix(name, envName+"_") {
			return removed, true
		}
	}
	return RemovedKey{}, false
}
