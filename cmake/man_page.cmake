# Writes the man page NAME.1.gz from `PROGRAM [SUBCOMMAND] --help` with help2man (run by
# cmake/package.cmake at build time, so the pages cannot drift from the command's help):
#   cmake -DHELP2MAN=... -DPROGRAM=... -DSUBCOMMAND=join -DNAME=gossip-rdzv-join
#         -DSUMMARY="..." -DOUTPUT=dir/gossip-rdzv-join.1 -P man_page.cmake
# help2man names a page after the program; a subcommand's page is renamed to NAME. With
# -DVERSION_STRING=X.Y.Z the program is not asked for --version (gossip-rdzv-sim has none).
if(SUBCOMMAND)
  set(help_option "${SUBCOMMAND} --help")
else()
  set(help_option "--help")
endif()
if(VERSION_STRING)
  set(version_option "--version-string=${VERSION_STRING}")
else()
  set(version_option "--version-option=--version")
endif()
# help2man runs "PROGRAM HELP_OPTION" through the shell: "join --help" is two words there.
execute_process(
  COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1 "--name=${SUMMARY}"
          "--help-option=${help_option}" ${version_option} "--output=${OUTPUT}"
          ${PROGRAM}
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man failed (${status}) for ${NAME}")
endif()
file(READ ${OUTPUT} page)
string(TOUPPER "${NAME}" title)
string(REGEX REPLACE "\n\\.TH [^ ]+ " "\n.TH ${title} " page "${page}")
string(REGEX REPLACE "\n\\.SH NAME\n[^ ]+ " "\n.SH NAME\n${NAME} " page "${page}")
file(WRITE ${OUTPUT} "${page}")
execute_process(COMMAND gzip -9nf ${OUTPUT} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip failed for ${OUTPUT}")
endif()
