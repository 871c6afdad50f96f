package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// generateCompletion prints completion code for shell, for upstream's `iggy --generate SHELL`
// (cobra's `iggy completion SHELL` works too).
func (a *app) generateCompletion(root *cobra.Command, shell string) error {
	switch strings.ToLower(shell) {
	case "bash":
		return root.GenBashCompletionV2(a.stdout, true)
	case "zsh":
		return root.GenZshCompletion(a.stdout)
	case "fish":
		return root.GenFishCompletion(a.stdout, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(a.stdout)
	}
	return usagef("--generate %q: supported shells are bash, zsh, fish and powershell", shell)
}
