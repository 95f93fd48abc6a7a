# scripts/lib/package-files.sh - sourced: the files the ferry .deb installs (besides
# /usr/bin/ferry), which scripts/readme-build and scripts/package-test check are there.
# shellcheck disable=SC2034
package_files=(/usr/share/man/man1/ferry.1.gz /usr/share/bash-completion/completions/ferry
  /usr/share/zsh/vendor-completions/_ferry /usr/share/fish/vendor_completions.d/ferry.fish
  /lib/systemd/system/ferry-receive.service /usr/lib/systemd/user/ferry-receive.service
  /lib/systemd/system/ferry.service /usr/lib/systemd/user/ferry.service
  /etc/ferry/config.toml /usr/share/doc/ferry/copyright /usr/share/applications/ferry.desktop
  /usr/share/icons/hicolor/scalable/apps/ferry.svg)
