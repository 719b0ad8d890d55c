# shellcheck shell=bash
# cp2k_input DIR SECONDS: an input for Debian's cp2k (cp2k.psmp) in DIR/md.inp, used by
# bench/watchdog.sh and bench/monitor-cpu.sh: a real code nobody here wrote, Fortran through
# ScaLAPACK, FFTW and Open MPI's Fortran bindings, whose stacks run 20-40 frames deep. Sourced.
#
# Two water molecules, DFT (Quickstep, DZVP), NVE molecular dynamics until cp2k's own WALLTIME
# (SECONDS) ends it.
cp2k_input() {
  cat >"$1/md.inp" <<EOT
&GLOBAL
  PROJECT WATER_MD
  RUN_TYPE MD
  PRINT_LEVEL LOW
  WALLTIME $2
&END GLOBAL
&MOTION
  &MD
    ENSEMBLE NVE
    STEPS 10000000
    TIMESTEP 0.5
    TEMPERATURE 300.0
  &END MD
  &PRINT
    &TRAJECTORY OFF
    &END
    &RESTART OFF
    &END
    &RESTART_HISTORY OFF
    &END
  &END PRINT
&END MOTION
&FORCE_EVAL
  METHOD Quickstep
  &DFT
    BASIS_SET_FILE_NAME BASIS_SET
    POTENTIAL_FILE_NAME POTENTIAL
    &MGRID
      CUTOFF 200
    &END MGRID
    &SCF
      EPS_SCF 1.0E-5
      SCF_GUESS ATOMIC
      &OT
      &END OT
    &END SCF
    &XC
      &XC_FUNCTIONAL Pade
      &END XC_FUNCTIONAL
    &END XC
  &END DFT
  &SUBSYS
    &CELL
      ABC 6.0 6.0 6.0
    &END CELL
    &COORD
    O   0.000000    0.000000   -0.065587
    H   0.000000   -0.757136    0.520545
    H   0.000000    0.757136    0.520545
    O   3.000000    3.000000    2.934413
    H   3.000000    2.242864    3.520545
    H   3.000000    3.757136    3.520545
    &END COORD
    &KIND H
      BASIS_SET DZVP-GTH-PADE
      POTENTIAL GTH-PADE-q1
    &END KIND
    &KIND O
      BASIS_SET DZVP-GTH-PADE
      POTENTIAL GTH-PADE-q6
    &END KIND
  &END SUBSYS
&END FORCE_EVAL
EOT
}
