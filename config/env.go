package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

const envPrefix = "IGGY_"

// ignoredEnvExact and ignoredEnvPrefixes are IGGY_* variables that are not
// configuration keys (test, CI, CLI and sibling-tool knobs).
var ignoredEnvExact = map[string]bool{
	"IGGY_CONFIG_PATH":            true,
	"IGGY_ENV_PATH":               true,
	"IGGY_ROOT_USERNAME":          true,
	"IGGY_ROOT_PASSWORD":          true,
	"IGGY_CI_BUILD":               true,
	"IGGY_SHARD_RUNTIME_CAPACITY": true,
	"IGGY_CONNECTORS_CONFIG_PATH": true,
	"IGGY_MCP_CONFIG_PATH":        true,
}

var ignoredEnvPrefixes = []string{"IGGY_TEST_", "IGGY_CONNECTORS_", "IGGY_MCP_"}

// indexMax bounds the index of an env-assembled array by its TOML key.
var indexMax = map[string]int{
	"nodes":                255,
	"advertised_addresses": 15,
	"trusted_issuers":      63,
}

// envVar is one IGGY_* variable; rest is the part still to resolve.
type envVar struct {
	name  string
	rest  string
	value string
}

// leafField is a settable key inside a struct type.
type leafField struct {
	index []int
	path  string
}

// arrayField is a slice-of-struct key, assembled from indexed variables.
type arrayField struct {
	index []int
	key   string
	path  string
}

// envSchema is the env-name view of one struct type.
type envSchema struct {
	leaves map[string]leafField
	arrays map[string]arrayField
}

var envSchemas sync.Map // reflect.Type → *envSchema

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	secretType          = reflect.TypeFor[Secret]()
)

func schemaFor(t reflect.Type) *envSchema {
	if cached, ok := envSchemas.Load(t); ok {
		return cached.(*envSchema)
	}
	schema := &envSchema{leaves: map[string]leafField{}, arrays: map[string]arrayField{}}
	collectSchema(t, nil, "", "", schema)
	envSchemas.Store(t, schema)
	return schema
}

func collectSchema(t reflect.Type, index []int, envName, path string, schema *envSchema) {
	for i := range t.NumField() {
		field := t.Field(i)
		key, _, _ := strings.Cut(field.Tag.Get("toml"), ",")
		if key == "" || key == "-" {
			continue
		}
		fieldIndex := append(append([]int(nil), index...), i)
		fieldEnv := envName + strings.ToUpper(key)
		fieldPath := key
		if path != "" {
			fieldPath = path + "." + key
		}
		switch {
		case isLeafType(field.Type):
			schema.leaves[fieldEnv] = leafField{index: fieldIndex, path: fieldPath}
		case field.Type.Kind() == reflect.Struct:
			collectSchema(field.Type, fieldIndex, fieldEnv+"_", fieldPath, schema)
		case field.Type.Kind() == reflect.Slice && field.Type.Elem().Kind() == reflect.Struct:
			schema.arrays[fieldEnv] = arrayField{index: fieldIndex, key: key, path: fieldPath}
		}
	}
}

func isLeafType(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int64, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// EnvNames lists every scalar IGGY_* name the configuration understands
// (indexed roster names excluded), sorted.
func EnvNames() []string {
	schema := schemaFor(reflect.TypeFor[Config]())
	names := make([]string, 0, len(schema.leaves))
	for name := range schema.leaves {
		names = append(names, envPrefix+name)
	}
	sort.Strings(names)
	return names
}

func isIgnoredEnv(name string) bool {
	if ignoredEnvExact[name] {
		return true
	}
	for _, prefix := range ignoredEnvPrefixes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// applyEnv overlays IGGY_* variables onto cfg.
func applyEnv(cfg *Config, env Env) ([]Warning, error) {
	var vars []envVar
	var problems []error
	for name, value := range env {
		if !strings.HasPrefix(name, envPrefix) || value == "" || isIgnoredEnv(name) {
			continue
		}
		if removed, ok := removedKeyForEnv(name); ok {
			problems = append(problems, fmt.Errorf("%s: %s", name, removed.message()))
			continue
		}
		vars = append(vars, envVar{name: name, rest: strings.TrimPrefix(name, envPrefix), value: value})
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].name < vars[j].name })
	var warnings []Warning
	if err := applyToStruct(reflect.ValueOf(cfg).Elem(), vars, &warnings); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	sort.Slice(warnings, func(i, j int) bool { return warnings[i].Variable < warnings[j].Variable })
	return warnings, nil
}

func applyToStruct(target reflect.Value, vars []envVar, warnings *[]Warning) error {
	schema := schemaFor(target.Type())
	var problems []error
	indexed := map[string][]envVar{}
	for _, v := range vars {
		if leaf, ok := schema.leaves[v.rest]; ok {
			if err := setLeaf(target.FieldByIndex(leaf.index), v); err != nil {
				problems = append(problems, err)
			}
			continue
		}
		if arrayName, ok := matchArray(schema, v.rest); ok {
			indexed[arrayName] = append(indexed[arrayName], v)
			continue
		}
		*warnings = append(*warnings, Warning{Variable: v.name, Message: "unknown configuration variable, ignored"})
	}
	arrayNames := make([]string, 0, len(indexed))
	for name := range indexed {
		arrayNames = append(arrayNames, name)
	}
	sort.Strings(arrayNames)
	for _, name := range arrayNames {
		array := schema.arrays[name]
		if err := assembleArray(target.FieldByIndex(array.index), name, array, indexed[name], warnings); err != nil {
			problems = append(problems, err)
		}
	}
	return errors.Join(problems...)
}

// matchArray finds the array key that rest starts with ("NODES_0_IP").
func matchArray(schema *envSchema, rest string) (string, bool) {
	for name := range schema.arrays {
		if tail, ok := strings.CutPrefix(rest, name+"_"); ok {
			digits := 0
			for digits < len(tail) && tail[digits] >= '0' && tail[digits] <= '9' {
				digits++
			}
			if digits > 0 && digits < len(tail) && tail[digits] == '_' {
				return name, true
			}
		}
	}
	return "", false
}

// assembleArray builds a fresh slice from indexed variables; it replaces
// whatever the defaults or the file held.
func assembleArray(target reflect.Value, envName string, array arrayField, vars []envVar, warnings *[]Warning) error {
	limit, ok := indexMax[array.key]
	if !ok {
		limit = 255
	}
	byIndex := map[int][]envVar{}
	maxIndex := -1
	var problems []error
	for _, v := range vars {
		tail := strings.TrimPrefix(v.rest, envName+"_")
		digits, rest, _ := strings.Cut(tail, "_")
		index, err := strconv.Atoi(digits)
		if err != nil || index > limit || (len(digits) > 1 && digits[0] == '0') {
			problems = append(problems, fmt.Errorf("%s: index %q of %s must be a number from 0 to %d", v.name, digits, array.path, limit))
			continue
		}
		byIndex[index] = append(byIndex[index], envVar{name: v.name, rest: rest, value: v.value})
		maxIndex = max(maxIndex, index)
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	slice := reflect.MakeSlice(target.Type(), maxIndex+1, maxIndex+1)
	for index := 0; index <= maxIndex; index++ {
		elementVars, present := byIndex[index]
		if !present {
			sample := byIndex[maxIndex][0].name
			problems = append(problems, fmt.Errorf("%s: %s index %d is missing: indexed variables must be contiguous from 0 (found up to index %d, e.g. %s)",
				envNameOfArrayIndex(sample, index), array.path, index, maxIndex, sample))
			continue
		}
		if err := applyToStruct(slice.Index(index), elementVars, warnings); err != nil {
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	target.Set(slice)
	return nil
}

// envNameOfArrayIndex renders the name pattern of a missing element from a
// sibling's name: IGGY_CLUSTER_NODES_2_IP, index 1 → IGGY_CLUSTER_NODES_1_*.
func envNameOfArrayIndex(sample string, index int) string {
	// The sample's last "_<digits>_" before its field is the array index.
	parts := strings.Split(sample, "_")
	for i := len(parts) - 2; i >= 0; i-- {
		if _, err := strconv.Atoi(parts[i]); err == nil {
			return strings.Join(parts[:i], "_") + "_" + strconv.Itoa(index) + "_*"
		}
	}
	return sample
}

func setLeaf(field reflect.Value, v envVar) error {
	shown := strconv.Quote(v.value)
	if field.Type() == secretType {
		shown = secretMask
	}
	if err := parseInto(field, v.value); err != nil {
		return fmt.Errorf("%s=%s: %w", v.name, shown, err)
	}
	return nil
}

func parseInto(field reflect.Value, text string) error {
	if field.Kind() == reflect.Pointer {
		fresh := reflect.New(field.Type().Elem())
		if err := parseInto(fresh.Elem(), text); err != nil {
			return err
		}
		field.Set(fresh)
		return nil
	}
	if unmarshaler, ok := field.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return unmarshaler.UnmarshalText([]byte(text))
	}
	switch field.Kind() {
	case reflect.String:
		field.SetString(text)
	case reflect.Bool:
		value, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("expected true or false")
		}
		field.SetBool(value)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		value, err := strconv.ParseUint(strings.TrimSpace(text), 10, field.Type().Bits())
		if err != nil {
			return fmt.Errorf("expected an unsigned integer of at most %d bits", field.Type().Bits())
		}
		field.SetUint(value)
	case reflect.Int, reflect.Int64:
		value, err := strconv.ParseInt(strings.TrimSpace(text), 10, field.Type().Bits())
		if err != nil {
			return fmt.Errorf("expected an integer")
		}
		field.SetInt(value)
	case reflect.Slice:
		items := parseStringList(text)
		list := reflect.MakeSlice(field.Type(), len(items), len(items))
		for i, item := range items {
			list.Index(i).SetString(item)
		}
		field.Set(list)
	default:
		return fmt.Errorf("unsupported field kind %s", field.Kind())
	}
	return nil
}

// parseStringList accepts "[a, b]", `["a", "b"]` or "a,b".
func parseStringList(text string) []string {
	trimmed := strings.TrimSpace(text)
	trimmed = strings.TrimSuffix(strings.TrimPrefix(trimmed, "["), "]")
	if strings.TrimSpace(trimmed) == "" {
		return []string{}
	}
	var items []string
	for _, item := range strings.Split(trimmed, ",") {
		item = strings.TrimSpace(item)
		item = strings.Trim(item, `"'`)
		items = append(items, item)
	}
	return items
}
