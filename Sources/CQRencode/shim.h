// libqrencode (Debian: libqrencode-dev): the QR codes `ferry receive --web` draws in the
// terminal.
#include <qrencode.h>
