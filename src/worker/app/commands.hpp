// commands.hpp — tzrec_train's argv entry points for the training commands: each parses its
// command's flags with CLI11 (--help prints them and returns 0; a bad flag prints the error and
// returns 2) and runs the library command of include/tzrec/train/train.hpp.
#pragma once

namespace tzrec {

int RunTrainEval(int argc, char** argv);  // argv[0] is the command name (train_command.cpp)
int RunEval(int argc, char** argv);       // eval_command.cpp
int RunExport(int argc, char** argv);     // export_command.cpp
int RunPredict(int argc, char** argv);    // export_command.cpp

}  // namespace tzrec
